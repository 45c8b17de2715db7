// The JS SDK's thread-centric protocol client (`client.threads.stream`, commands on
// POST /threads/{id}/commands, events on POST /threads/{id}/stream/events or a WebSocket on
// the same path): start a run, read its values, messages and tool calls, answer the
// interrupt it stops at, and read the resumed run to its end.
// Arguments (JSON in argv[2]): {api, assistant, transport: "sse"|"websocket", prompt,
// response, timeoutMs}. Prints one JSON object.
import { Client } from "@langchain/langgraph-sdk";
import WebSocket from "ws";
import { collectMessages, summary } from "./events.mjs";

const args = JSON.parse(process.argv[2]);
const timeout = args.timeoutMs ?? 20000;
const TERMINAL = new Set(["completed", "failed", "interrupted"]);
const result = { ok: false, transport: args.transport };

function within(promise, what) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeout);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

function messageText(message) {
  const content = message?.content ?? message?.kwargs?.content;
  if (typeof content === "string") return content;
  return (content ?? []).map((part) => part?.text ?? "").join("");
}

function messagesOf(values) {
  return (values?.messages ?? []).map((m) => ({
    type: typeof m.getType === "function" ? m.getType() : m.type,
    text: messageText(m),
  }));
}

/** Read `subscription` (without closing it) until the next root terminal lifecycle event. */
async function untilRunEnds(subscription, log, seen) {
  while (true) {
    const iterator = subscription[Symbol.asyncIterator]();
    while (true) {
      const { done, value } = await iterator.next();
      if (done) break; // paused after a terminal: read on once the next run resumes it
      if (value.event_id != null) {
        if (seen.has(value.event_id)) continue;
        seen.add(value.event_id);
      }
      log.push(value);
      const data = value.params?.data;
      if (value.method === "lifecycle" && value.params.namespace.length === 0 && TERMINAL.has(data?.event)) {
        return data.event;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const client = new Client({ apiUrl: args.api, apiKey: null });
const thread = client.threads.stream({
  assistantId: args.assistant,
  transport: args.transport,
  webSocketFactory: (url) => new WebSocket(url),
  maxReconnectAttempts: 0,
});
const errors = [];
thread.onError((error) => errors.push(String(error?.message ?? error)));
result.threadId = thread.threadId;
try {
  const started = await within(
    thread.run.start({ input: { messages: [{ role: "user", content: args.prompt }] } }),
    "run.start",
  );
  result.runId = started?.run_id ?? null;

  // The projections of the first run (they end at its terminal lifecycle event).
  const messages = (async () => {
    const out = [];
    for await (const message of thread.messages) {
      out.push({ id: message.id, namespace: message.namespace, text: await message.text });
    }
    return out;
  })();
  const toolCalls = (async () => {
    // The SDK yields a call when it starts and again when it finishes: keep one per call id.
    const out = new Map();
    for await (const call of thread.toolCalls) {
      const output = await call.output.catch((error) => ({ error: String(error) }));
      out.set(call.callId, { name: call.name, callId: call.callId, input: call.input, output });
    }
    return [...out.values()];
  })();

  // Raw events of every channel, across both runs.
  const events = [];
  const seen = new Set();
  const subscription = await within(
    thread.subscribe({
      channels: ["lifecycle", "input", "values", "updates", "messages", "tools", "checkpoints"],
    }),
    "subscribe",
  );
  result.firstEnd = await within(untilRunEnds(subscription, events, seen), "the first run's end");
  result.firstValues = messagesOf(await within(thread.output, "thread.output"));
  result.messages = await within(messages, "thread.messages");
  result.toolCalls = await within(toolCalls, "thread.toolCalls");
  result.interrupted = thread.interrupted;
  result.interrupts = thread.interrupts.map((i) => ({ ...i }));

  if (thread.interrupted && thread.interrupts.length > 0) {
    const [pending] = thread.interrupts;
    await within(
      thread.input.respond({
        namespace: pending.namespace,
        interrupt_id: pending.interruptId,
        response: args.response,
      }),
      "input.respond",
    );
    result.secondEnd = await within(untilRunEnds(subscription, events, seen), "the resumed run's end");
  }
  // Arrival order is not seq order on SSE: when a subscription widens the filter, the SDK
  // opens a new stream that replays from the start while the old one is still delivering.
  events.sort((a, b) => a.seq - b.seq);
  const lastValues = events.filter((e) => e.method === "values").at(-1);
  result.finalValues = messagesOf(lastValues?.params?.data);
  result.events = events.map(summary);
  result.ok = true;
} catch (error) {
  result.error = String(error?.stack ?? error);
} finally {
  result.streamErrors = errors;
  await thread.close().catch(() => undefined);
}
console.log(JSON.stringify(result));
process.exit(0);
