// What an app sees through the JS SDK's thread-centric protocol client
// (`client.threads.stream`), over SSE or a WebSocket, in one scenario at a time:
//
// - cancel:   a run cancelled through REST (`runs.cancel`) while it streams
// - followup: two runs, one after the other, on the same thread stream
// - subagent: a `task` tool call that delegates to a subagent
// - drop:     every connection dropped mid-run (a proxy in front of the server hangs up)
// - late:     projections opened after the run has ended
// - auth:     a second signed-in user on the first user's thread
//
// Arguments (JSON in argv[2]): {scenario, api, assistant, transport, ...the scenario's}.
// Prints one JSON object: what the app saw, `ok`, and `error` when something threw.
import net from "node:net";
import { Client } from "@langchain/langgraph-sdk";
import WebSocket from "ws";
import { collectMessages, summary } from "./events.mjs";

const args = JSON.parse(process.argv[2]);
const timeout = args.timeoutMs ?? 15000;
const TERMINAL = new Set(["completed", "failed", "interrupted"]);

function within(promise, what, ms = timeout) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const user = (content) => ({ messages: [{ role: "user", content }] });
const isRoot = (event) => event.params.namespace.length === 0;
const rootEnd = (event) =>
  event.method === "lifecycle" && isRoot(event) && TERMINAL.has(event.params.data?.event);

function openThread(client, options = {}, threadId = undefined) {
  const settings = {
    assistantId: args.assistant,
    transport: args.transport,
    webSocketFactory: (url) => new WebSocket(url),
    maxReconnectAttempts: 0,
    ...options,
  };
  return threadId ? client.threads.stream(threadId, settings) : client.threads.stream(settings);
}

/** Everything `subscription` yields until the root's next terminal lifecycle event, which it
 * returns; `onEvent` sees each event first. A subscription pauses (its iterator ends) after
 * a terminal event: a paused one is read again once the next run resumes it. */
async function readUntilRunEnds(subscription, log, onEvent = () => {}) {
  while (true) {
    const iterator = subscription[Symbol.asyncIterator]();
    while (true) {
      const { done, value } = await iterator.next();
      if (done) break;
      log.push(value);
      await onEvent(value);
      if (rootEnd(value)) return value.params.data;
    }
    await sleep(20);
  }
}

function deltaText(events, namespace = []) {
  return events
    .filter(
      (e) =>
        e.method === "messages" &&
        e.params.data.event === "content-block-delta" &&
        e.params.data.delta?.type === "text-delta" &&
        JSON.stringify(e.params.namespace) === JSON.stringify(namespace),
    )
    .map((e) => e.params.data.delta.text)
    .join("");
}

function messageText(message) {
  const content = message?.content ?? message?.kwargs?.content;
  if (typeof content === "string") return content;
  return (content ?? []).map((part) => part?.text ?? "").join("");
}

function lastMessage(values) {
  const messages = values?.messages ?? [];
  const last = messages.at(-1);
  if (last == null) return null;
  return {
    type: typeof last.getType === "function" ? last.getType() : last.type,
    text: messageText(last),
  };
}

/** The first `count` messages of a message projection, each with its text once complete. */
async function firstMessages(projection, count) {
  const out = [];
  for await (const message of projection) {
    out.push({
      id: message.id,
      namespace: message.namespace,
      text: await message.text,
      error: message.assembled?.error ?? null,
    });
    if (out.length === count) break;
  }
  return out;
}

// -- scenarios ------------------------------------------------------------------------------

/** A run cancelled through REST while it streams: the stream ends with the root `failed`. */
async function cancel(result) {
  const client = new Client({ apiUrl: args.api, apiKey: null });
  const thread = openThread(client);
  try {
    const { run_id: runId } = await within(thread.run.start({ input: user(args.prompt) }), "run.start");
    result.runId = runId;
    const messages = collectMessages(thread.messages);
    const events = [];
    const subscription = await within(thread.subscribe(["messages", "lifecycle"]), "subscribe");
    let cancelled = false;
    result.end = await within(
      readUntilRunEnds(subscription, events, async (event) => {
        if (!cancelled && event.method === "messages" && event.params.data.event === "content-block-delta") {
          cancelled = true; // the first token: the run is under way
          await client.runs.cancel(thread.threadId, runId);
        }
      }),
      "the cancelled run's end",
    );
    result.textBeforeEnd = deltaText(events);
    result.messages = await within(messages, "thread.messages");
    result.output = lastMessage(await within(thread.output, "thread.output"));
    result.interrupted = thread.interrupted;
    result.runStatus = (await client.runs.get(thread.threadId, runId)).status;
    result.events = events.map(summary);
  } finally {
    await thread.close().catch(() => undefined);
  }
}

/** Two runs, one after the other, on one thread stream and one subscription. The thread is
 * created first, so the app subscribes before the first run: a subscription made while a run
 * streams gets its history from a new SSE stream while the old one still delivers the events
 * both carry, so it may see the run's end before the run's messages (the SDK's doing). */
async function followup(result) {
  const client = new Client({ apiUrl: args.api, apiKey: null });
  const { thread_id: threadId } = await client.threads.create();
  const thread = openThread(client, {}, threadId);
  try {
    const subscription = await within(thread.subscribe(["messages", "lifecycle", "values"]), "subscribe");
    const events = [];
    result.runs = [];
    for (const text of args.texts) {
      const { run_id: runId } = await within(thread.run.start({ input: user(`@say ${text}`) }), "run.start");
      const from = events.length;
      const end = await within(readUntilRunEnds(subscription, events), `the end of run ${runId}`);
      const own = events.slice(from);
      const lastValues = own.filter((e) => e.method === "values").at(-1);
      result.runs.push({
        runId,
        end: end.event,
        text: deltaText(own),
        lastMessage: lastMessage(lastValues?.params.data),
        lifecycleRunIds: [
          ...new Set(
            own
              .filter((e) => e.method === "lifecycle" && isRoot(e))
              .map((e) => e.event_id?.split(":")[1]),
          ),
        ],
      });
    }
    const state = await client.threads.getState(thread.threadId);
    result.stateMessages = state.values.messages.map((m) => ({ type: m.type, text: messageText(m) }));
    result.events = events.map(summary);
  } finally {
    await thread.close().catch(() => undefined);
  }
}

/** A `task` tool call delegating to a subagent: the subagent and subgraph projections. */
async function subagent(result) {
  const client = new Client({ apiUrl: args.api, apiKey: null });
  const thread = openThread(client);
  try {
    await within(thread.run.start({ input: user(args.prompt) }), "run.start");
    const subagents = (async () => {
      const out = [];
      for await (const handle of thread.subagents) {
        out.push({
          name: handle.name,
          callId: handle.callId,
          namespace: handle.namespace,
          taskInput: await handle.taskInput,
          output: await handle.output,
        });
      }
      return out;
    })();
    const subgraphs = (async () => {
      const out = [];
      for await (const handle of thread.subgraphs) {
        const [message] = await within(firstMessages(handle.messages, 1), "a subgraph's message");
        out.push({
          name: handle.name,
          namespace: handle.namespace,
          graphName: handle.graphName,
          cause: handle.cause ?? null,
          toolName: handle.toolStartedEvent?.params.data.tool_name ?? null,
          message,
        });
      }
      return out;
    })();
    result.output = lastMessage(await within(thread.output, "thread.output"));
    result.subagents = await within(subagents, "thread.subagents");
    result.subgraphs = await within(subgraphs, "thread.subgraphs");
    result.tree = (await within(thread.agent.getTree(), "agent.getTree")).tree;
  } finally {
    await thread.close().catch(() => undefined);
  }
}

/** A TCP proxy in front of the server that can hang up every connection at once. */
async function startProxy(target) {
  const { hostname, port } = new URL(target);
  const sockets = new Set();
  const server = net.createServer((downstream) => {
    const upstream = net.connect(Number(port), hostname);
    for (const socket of [downstream, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => undefined);
    }
    downstream.pipe(upstream);
    upstream.pipe(downstream);
    downstream.on("close", () => upstream.destroy());
    upstream.on("close", () => downstream.destroy());
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    drop() {
      const count = sockets.size;
      for (const socket of sockets) socket.destroy();
      return count;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** Every connection dropped mid-run: the SDK reconnects and the app reads on, with nothing
 * lost and nothing repeated. */
async function drop(result) {
  const proxy = await startProxy(args.api);
  const client = new Client({ apiUrl: proxy.url, apiKey: null });
  const reconnects = [];
  const thread = openThread(client, {
    maxReconnectAttempts: 5,
    reconnectDelayMs: () => 50,
    onReconnect: ({ attempt, delayMs }) => reconnects.push({ attempt, delayMs }),
  });
  const errors = [];
  thread.onError((error) => errors.push(String(error?.message ?? error)));
  try {
    await within(thread.run.start({ input: user(args.prompt) }), "run.start");
    const messages = collectMessages(thread.messages);
    const events = [];
    const subscription = await within(thread.subscribe(["messages", "lifecycle"]), "subscribe");
    let deltas = 0;
    result.end = (
      await within(
        readUntilRunEnds(subscription, events, (event) => {
          if (event.params.data.event === "content-block-delta" && ++deltas === args.dropAfter) {
            result.dropped = proxy.drop();
            result.textAtDrop = deltaText(events);
          }
        }),
        "the run's end",
      )
    ).event;
    result.text = deltaText(events);
    result.messages = await within(messages, "thread.messages");
    result.output = lastMessage(await within(thread.output, "thread.output"));
    result.events = events.map(summary);
    result.reconnects = reconnects;
    result.streamErrors = errors;
  } finally {
    await thread.close().catch(() => undefined);
    await proxy.close();
  }
}

/** Projections opened only once the run has ended still see the whole run. */
async function late(result) {
  const client = new Client({ apiUrl: args.api, apiKey: null });
  const thread = openThread(client);
  try {
    await within(thread.run.start({ input: user(args.prompt) }), "run.start");
    result.output = lastMessage(await within(thread.output, "thread.output"));
    const calls = (async () => {
      for await (const call of thread.toolCalls) {
        return [{ name: call.name, callId: call.callId, input: call.input }];
      }
      return [];
    })();
    result.toolCalls = await within(calls, "thread.toolCalls");
    result.messages = await within(firstMessages(thread.messages, 3), "thread.messages");
  } finally {
    await thread.close().catch(() => undefined);
  }
}

/** What the stream told the app through `onError`: each error's message and HTTP status. */
function errorsOf(thread) {
  const errors = [];
  thread.onError((error) => errors.push({ error: String(error?.message ?? error), status: error?.status ?? null }));
  return errors;
}

async function outcome(promise, what) {
  try {
    return { ok: true, value: await within(promise, what) };
  } catch (error) {
    return { ok: false, error: String(error?.message ?? error), status: error?.status ?? null };
  }
}

/** Alice's thread, then what Bob (another user) and an unsigned client can do with it. */
async function auth(result) {
  const bearer = (token) => ({ Authorization: `Bearer ${token}` });
  const alice = new Client({ apiUrl: args.api, apiKey: null, defaultHeaders: bearer(args.alice) });
  const own = openThread(alice, { transport: "sse" });
  await within(own.run.start({ input: user(args.prompt) }), "alice's run.start");
  result.aliceOutput = lastMessage(await within(own.output, "alice's thread.output"));
  const threadId = own.threadId;
  await own.close();

  // Bob over SSE, with his token in the client's headers.
  const bob = new Client({ apiUrl: args.api, apiKey: null, defaultHeaders: bearer(args.bob) });
  const bobSse = openThread(bob, { transport: "sse" }, threadId);
  result.bobSse = {
    subscribe: await outcome(bobSse.subscribe(["values", "messages"]), "bob's subscribe"),
    runStart: await outcome(bobSse.run.start({ input: user("@say mine now") }), "bob's run.start"),
    stateGet: await outcome(bobSse.state.get({ namespace: [] }), "bob's state.get"),
  };
  await bobSse.close();

  // Over a WebSocket the SDK refuses a client with headers: a browser cannot send them.
  const withHeaders = openThread(bob, { transport: "websocket" }, threadId);
  result.wsWithHeaders = await outcome(withHeaders.subscribe(["values"]), "a socket with headers");
  await withHeaders.close().catch(() => undefined);

  // A client without headers opens the socket unsigned.
  const anonymous = new Client({ apiUrl: args.api, apiKey: null });
  const unsigned = openThread(anonymous, { transport: "websocket" }, threadId);
  const unsignedErrors = errorsOf(unsigned);
  result.wsUnsigned = await outcome(unsigned.subscribe(["values"]), "an unsigned socket");
  await sleep(50);
  result.wsUnsigned.onError = unsignedErrors;
  await unsigned.close().catch(() => undefined);

  // In Node, a socket factory can send the header itself (`ws` takes headers).
  const signedSocket = (token) => (url) => new WebSocket(url, { headers: bearer(token) });
  const bobWs = openThread(anonymous, { transport: "websocket", webSocketFactory: signedSocket(args.bob) }, threadId);
  const bobErrors = errorsOf(bobWs);
  result.wsBob = await outcome(bobWs.subscribe(["values"]), "bob's socket");
  await sleep(50);
  result.wsBob.onError = bobErrors;
  await bobWs.close().catch(() => undefined);

  const aliceWs = openThread(anonymous, { transport: "websocket", webSocketFactory: signedSocket(args.alice) }, threadId);
  const state = await outcome(aliceWs.state.get({ namespace: [] }), "alice's socket state.get");
  result.wsAlice = { ok: state.ok, error: state.error ?? null, last: state.ok ? lastMessage(state.value.values) : null };
  await aliceWs.close().catch(() => undefined);
}

const SCENARIOS = { cancel, followup, subagent, drop, late, auth };
const result = { ok: false, scenario: args.scenario, transport: args.transport };
try {
  await SCENARIOS[args.scenario](result);
  result.ok = true;
} catch (error) {
  result.error = String(error?.stack ?? error);
}
console.log(JSON.stringify(result));
process.exit(0);
