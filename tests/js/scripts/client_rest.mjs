// The JS SDK's REST client (`new Client()`: assistants, threads, state, runs, the thread
// stream, store, crons) as an app calls it: each step's result in brief, so the test can
// check that what the JS client sends (camelCase options become snake_case fields and query
// parameters) is understood.
// Arguments (JSON in argv[2]): {api, assistant, timeoutMs}. Prints one JSON object: `steps`,
// each step's result or `{error, status}`.
import { Client } from "@langchain/langgraph-sdk";

const args = JSON.parse(process.argv[2]);
const timeout = args.timeoutMs ?? 20000;
const client = new Client({ apiUrl: args.api, apiKey: null, timeoutMs: timeout });
const assistant = args.assistant;
const user = (content) => ({ messages: [{ role: "user", content }] });
const steps = {};

function messageText(message) {
  const content = message?.content;
  if (typeof content === "string") return content;
  return (content ?? []).map((part) => part?.text ?? "").join("");
}

const lastText = (values) => messageText(values?.messages?.at(-1));

/** Run `body`; record what it returns, or the error it throws (with its HTTP status). */
async function step(name, body) {
  try {
    steps[name] = (await body()) ?? null;
  } catch (error) {
    steps[name] = { error: String(error?.message ?? error), status: error?.status ?? null };
  }
  return steps[name];
}

async function collect(stream, until = () => false) {
  const events = [];
  for await (const part of stream) {
    events.push(part);
    if (until(part)) break;
  }
  return events;
}

// -- assistants -----------------------------------------------------------------------------
await step("assistants.search", async () =>
  (await client.assistants.search({ graphId: assistant, limit: 10 })).map((a) => a.graph_id),
);
await step("assistants.get", async () => {
  const found = await client.assistants.get(assistant);
  return { graphId: found.graph_id, version: found.version };
});
await step("assistants.getGraph", async () => {
  const graph = await client.assistants.getGraph(assistant);
  return { nodes: graph.nodes.length > 0, edges: graph.edges.length > 0 };
});
await step("assistants.getSchemas", async () =>
  Object.keys(await client.assistants.getSchemas(assistant)).sort(),
);
let ownAssistant = null;
await step("assistants.create", async () => {
  const created = await client.assistants.create({
    graphId: assistant,
    name: "js-helper",
    description: "made by the JS client",
    metadata: { made_by: "js" },
    context: { tone: "brief" },
    ifExists: "raise",
  });
  ownAssistant = created.assistant_id;
  return { name: created.name, description: created.description, context: created.context };
});
await step("assistants.update", async () => {
  const updated = await client.assistants.update(ownAssistant, { name: "js-helper-2" });
  return { name: updated.name, version: updated.version };
});
await step("assistants.getVersions", async () =>
  (await client.assistants.getVersions(ownAssistant, { limit: 10 })).map((v) => v.version).sort(),
);
await step("assistants.setLatest", async () => {
  const latest = await client.assistants.setLatest(ownAssistant, 1);
  return { name: latest.name, version: latest.version };
});
await step("assistants.count", () => client.assistants.count({ metadata: { made_by: "js" } }));
await step("assistants.delete", async () => {
  await client.assistants.delete(ownAssistant);
  return await client.assistants.count({ metadata: { made_by: "js" } });
});

// -- threads --------------------------------------------------------------------------------
const threadId = crypto.randomUUID();
await step("threads.create", async () => {
  const thread = await client.threads.create({ threadId, metadata: { app: "js", n: 1 } });
  const again = await client.threads.create({ threadId, ifExists: "do_nothing" });
  return { id: thread.thread_id, again: again.thread_id, metadata: again.metadata };
});
await step("threads.update", async () => (await client.threads.update(threadId, { metadata: { n: 2 } })).metadata);
await step("threads.get", async () => {
  const thread = await client.threads.get(threadId);
  return { status: thread.status, metadata: thread.metadata, stateUpdatedAt: typeof thread.state_updated_at };
});

// -- runs -----------------------------------------------------------------------------------
let streamedRunId = null;
await step("runs.stream", async () => {
  const created = [];
  const events = await collect(
    client.runs.stream(threadId, assistant, {
      input: user("@say streamed from js"),
      streamMode: ["values", "messages-tuple", "updates"],
      streamResumable: true,
      onRunCreated: (params) => created.push(params),
    }),
  );
  streamedRunId = created[0]?.run_id ?? null;
  const values = events.filter((e) => e.event === "values").at(-1)?.data;
  return {
    created: created.map((c) => ({ run: typeof c.run_id, thread: c.thread_id })),
    kinds: [...new Set(events.map((e) => e.event))].sort(),
    ids: events.every((e) => typeof e.id === "string"),
    last: lastText(values),
  };
});
await step("runs.joinStream", async () => {
  // A finished run's events, replayed from the start.
  const events = await collect(
    client.runs.joinStream(threadId, streamedRunId, { lastEventId: "-1", streamMode: "values" }),
  );
  return {
    kinds: [...new Set(events.map((e) => e.event))].sort(),
    last: lastText(events.filter((e) => e.event === "values").at(-1)?.data),
  };
});
await step("runs.createAndJoin", async () => {
  const run = await client.runs.create(threadId, assistant, {
    input: user("@say joined"),
    metadata: { via: "create" },
    multitaskStrategy: "enqueue",
  });
  const values = await client.runs.join(threadId, run.run_id);
  const done = await client.runs.get(threadId, run.run_id);
  // What its model calls spent: one more key of the SDK's Run, read as it is.
  const usage = done.usage;
  return {
    status: done.status,
    metadata: done.metadata,
    last: lastText(values),
    usage: { calls: usage.model_calls, models: Object.keys(usage.models), tokens: usage.total_tokens > 0 },
  };
});
await step("runs.list", async () =>
  (await client.runs.list(threadId, { limit: 10, status: "success", select: ["run_id", "status"] })).map(
    (r) => ({ keys: Object.keys(r).sort(), status: r.status }),
  ),
);
await step("runs.wait.stateless", async () => lastText(await client.runs.wait(null, assistant, { input: user("@say no thread") })));
await step("runs.wait.ifNotExists", async () => {
  const fresh = crypto.randomUUID();
  const values = await client.runs.wait(fresh, assistant, { input: user("@say made for me"), ifNotExists: "create" });
  return { last: lastText(values), thread: (await client.threads.get(fresh)).thread_id === fresh };
});
await step("runs.createBatch", async () => {
  const runs = await client.runs.createBatch([
    { assistantId: assistant, input: user("@say one") },
    { assistantId: assistant, input: user("@say two") },
  ]);
  return runs.map((r) => typeof r.run_id);
});
await step("runs.cancelMany", async () => {
  const slow = await client.runs.create(threadId, assistant, { input: user(`@slow 0.2 @say ${"w ".repeat(40)}`) });
  await client.runs.cancelMany({ threadId, runIds: [slow.run_id], action: "interrupt" });
  await client.runs.join(threadId, slow.run_id);
  return (await client.runs.get(threadId, slow.run_id)).status;
});
await step("runs.delete", async () => {
  const run = await client.runs.create(threadId, assistant, { input: user("@say gone soon") });
  await client.runs.join(threadId, run.run_id);
  await client.runs.delete(threadId, run.run_id);
  try {
    await client.runs.get(threadId, run.run_id);
    return "still there";
  } catch (error) {
    return error.status;
  }
});

// -- the thread's stream: runs on the thread as they happen ---------------------------------
await step("threads.joinStream", async () => {
  const controller = new AbortController();
  const events = [];
  const reading = (async () => {
    try {
      for await (const part of client.threads.joinStream(threadId, {
        streamMode: ["run_modes", "lifecycle"],
        signal: controller.signal,
      })) {
        events.push(part);
        if (part.event === "metadata" && part.data?.status === "run_done") break;
      }
    } catch (error) {
      if (error?.name !== "AbortError") throw error;
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, 300)); // the stream is open
  const run = await client.runs.create(threadId, assistant, { input: user("@say seen live") });
  await Promise.race([reading, new Promise((resolve) => setTimeout(resolve, timeout / 2))]);
  controller.abort();
  await reading;
  const runIds = events.map((e) => e.data?.run_id).filter(Boolean);
  return { runDone: runIds.includes(run.run_id), kinds: [...new Set(events.map((e) => e.event))].sort() };
});

// -- state ----------------------------------------------------------------------------------
await step("threads.getState", async () => {
  const state = await client.threads.getState(threadId);
  return { last: lastText(state.values), checkpoint: typeof state.checkpoint?.checkpoint_id, next: state.next };
});
await step("threads.getHistory", async () => {
  const history = await client.threads.getHistory(threadId, { limit: 2 });
  const older = await client.threads.getState(threadId, history[1].checkpoint.checkpoint_id);
  return { count: history.length, olderMatches: older.checkpoint.checkpoint_id === history[1].checkpoint.checkpoint_id };
});
await step("threads.updateState", async () => {
  const config = await client.threads.updateState(threadId, {
    values: { messages: [{ type: "ai", content: "written by the app", id: "from-app" }] },
  });
  const state = await client.threads.getState(threadId);
  // The answer is `{checkpoint}` (as the Python SDK types it; the JS SDK types `configurable`).
  return { checkpoint: typeof config.checkpoint?.checkpoint_id, last: lastText(state.values) };
});
// `patchState` (PATCH /threads/{id}/state) is not an operation of the API.
await step("threads.patchState", () => client.threads.patchState(threadId, { reviewed: true }));
await step("threads.search", async () => {
  const found = await client.threads.search({
    metadata: { app: "js" },
    sortBy: "state_updated_at",
    sortOrder: "desc",
    select: ["thread_id", "metadata"],
    limit: 5,
  });
  return found.map((t) => ({ id: t.thread_id === threadId, keys: Object.keys(t).sort() }));
});
await step("threads.count", () => client.threads.count({ metadata: { app: "js" } }));
await step("threads.copyAndPrune", async () => {
  const copy = await client.threads.copy(threadId);
  const copied = await client.threads.getState(copy.thread_id);
  const pruned = await client.threads.prune([copy.thread_id]);
  return { last: lastText(copied.values), pruned: pruned.pruned_count };
});

// -- store ----------------------------------------------------------------------------------
await step("store", async () => {
  const ns = ["js", "notes"];
  await client.store.putItem(ns, "first", { text: "hello", tag: "a" });
  await client.store.putItem(ns, "second", { text: "bye", tag: "b" }, { index: false });
  const item = await client.store.getItem(ns, "first");
  const search = await client.store.searchItems(["js"], { filter: { tag: "a" }, limit: 10 });
  const namespaces = await client.store.listNamespaces({ prefix: ["js"], maxDepth: 2 });
  await client.store.deleteItem(ns, "first");
  return {
    item: { namespace: item.namespace, key: item.key, value: item.value },
    found: search.items.map((i) => i.key),
    namespaces: namespaces.namespaces,
    afterDelete: await client.store.getItem(ns, "first"),
  };
});

// -- crons ----------------------------------------------------------------------------------
await step("crons", async () => {
  const cron = await client.crons.create(assistant, {
    schedule: "0 0 1 1 *",
    input: user("@say yearly"),
    metadata: { made_by: "js" },
  });
  const onThread = await client.crons.createForThread(threadId, assistant, { schedule: "0 0 1 1 *" });
  const updated = await client.crons.update(cron.cron_id, { enabled: false });
  const search = await client.crons.search({ threadId, limit: 10, sortBy: "created_at" });
  const count = await client.crons.count({ metadata: { made_by: "js" } });
  await client.crons.delete(cron.cron_id);
  await client.crons.delete(onThread.cron_id);
  return {
    enabled: updated.enabled,
    onThread: search.map((c) => c.cron_id === onThread.cron_id),
    count,
    after: await client.crons.count({}),
  };
});

// -- and the thread goes --------------------------------------------------------------------
await step("threads.delete", async () => {
  await client.threads.delete(threadId);
  try {
    await client.threads.get(threadId);
    return "still there";
  } catch (error) {
    return error.status;
  }
});

console.log(JSON.stringify({ ok: true, steps }));
process.exit(0);
