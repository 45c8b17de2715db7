// Chat with the agent on the official `useStream` hook: tokens as they stream, tool calls and
// subagent delegations (expandable), the files the agent wrote, errors, approval gates and
// requests to connect an account. The thread is kept in the address (#/chat/<thread id>) so
// a reload comes back to it.
import { useStream } from "@langchain/langgraph-sdk/react";
import { useCallback, useEffect, useRef, useState } from "react";
import { Alert } from "../Alert.jsx";
import { describeError } from "../api.js";
import { Connect, isConnectionRequest } from "../chat/Connect.jsx";
import { Files } from "../chat/Files.jsx";
import { Gate, isApprovalRequest } from "../chat/Gate.jsx";
import { Messages } from "../chat/Messages.jsx";
import { textOf } from "../chat/text.js";
import { useNewRun } from "../chat/useNewRun.js";
import { useConsole } from "../context.js";
import { navigate } from "../route.js";

/** Submit options of every run: subagents stream their own messages too. */
const RUN = { streamSubgraphs: true };

/** The resume value answering `interrupt` with `answer`: the answer alone when it is the
 * only interrupt waiting, else keyed by its id. */
function resumeValue(interrupts, interrupt, answer) {
  return interrupts.length > 1 && interrupt.id ? { [interrupt.id]: answer } : answer;
}

/** A run in these states can still be joined to stream what it sends. */
const UNFINISHED = new Set(["pending", "running"]);

function Composer({ stream }) {
  const [draft, setDraft] = useState("");
  const send = (event) => {
    event.preventDefault();
    if (!draft.trim() || stream.isLoading) return;
    stream.submit({ messages: [{ type: "human", content: draft }] }, RUN);
    setDraft("");
  };
  return (
    <form className="composer" onSubmit={send}>
      <label htmlFor="prompt" className="visually-hidden">
        Message
      </label>
      <textarea
        id="prompt"
        rows={2}
        value={draft}
        placeholder="Message the agent"
        onChange={(event) => setDraft(event.target.value)}
        onKeyDown={(event) => {
          // Not while an input method composes a word: its Enter picks the word.
          if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) send(event);
        }}
      />
      <button type="submit" disabled={stream.isLoading}>
        Send
      </button>
      {stream.isLoading ? (
        <button type="button" onClick={() => stream.stop()}>
          Stop
        </button>
      ) : null}
    </form>
  );
}

/** What failed, in words: a run of this page, loading the thread (an HTTP answer), or the
 * thread's last run (its error, kept in the thread). */
function failureOf(error, runError) {
  if (error === runError) return "The run failed";
  if (error.status ?? error.response?.status) return "Loading the thread failed";
  return "The last run failed";
}

/** The status line (announced): the agent works, waits (`waiting` says for what), or has
 * answered. */
function useStatus(stream, waiting) {
  const [answered, setAnswered] = useState(false); // a run of this page has ended
  const wasLoading = useRef(false);
  useEffect(() => {
    if (wasLoading.current !== stream.isLoading) setAnswered(!stream.isLoading);
    wasLoading.current = stream.isLoading;
  }, [stream.isLoading]);
  if (stream.isLoading) return "The agent is working…";
  if (waiting) return waiting;
  const last = answered ? stream.messages.findLast((message) => message.type === "ai" && textOf(message)) : null;
  if (!last) return "";
  return (
    <>
      The agent answered.<span className="visually-hidden"> {textOf(last)}</span>
    </>
  );
}

/** What the run waits for, as the status line says it: `[label for tool calls, status]`. */
function waitingFor(gates, connections) {
  if (gates.length) return ["approval", "Waiting for your decision."];
  if (connections.length) {
    const servers = connections.map((interrupt) => interrupt.value.server).join(", ");
    return ["a connection", `Waiting for you to connect ${servers}.`];
  }
  return [null, ""];
}

/** One mount of the thread's stream. `join`: a run started elsewhere to stream once the
 * thread is loaded; `onNewRun(run)`: such a run appeared while a connection was pending. */
function Conversation({ id, join, onNewRun }) {
  const { info, client } = useConsole();
  const runError = useRef(null);
  const stream = useStream({
    client,
    assistantId: info.assistant_id ?? info.graph,
    threadId: id,
    onThreadId: (threadId) => navigate("chat", threadId, { replace: true }),
    reconnectOnMount: true,
    filterSubagentMessages: true,
    onError: (error) => {
      runError.current = error;
    },
  });
  const interrupts = stream.isLoading ? [] : stream.interrupts;
  const gates = interrupts.filter(isApprovalRequest);
  const connections = interrupts.filter(isConnectionRequest);
  const [toolsWait, waiting] = waitingFor(gates, connections);
  const status = useStatus(stream, waiting);
  const resume = (interrupt, answer) =>
    stream.submit(null, {
      ...RUN,
      command: { resume: resumeValue(stream.interrupts, interrupt, answer) },
    });

  // The provider's callback resumes the run in a new one: follow it here.
  useNewRun(client, id, connections.length > 0, onNewRun);
  // A run already under way when the thread is opened (the callback resumed it before this
  // page loaded it, or another client's): followed too, once the thread is loaded.
  const looked = useRef(null);
  useEffect(() => {
    if (!id || join?.thread_id === id || looked.current === id || stream.isThreadLoading) return;
    looked.current = id;
    if (stream.isLoading) return; // this page's own run
    client.runs.list(id, { limit: 1 }).then(
      ([run]) => run && UNFINISHED.has(run.status) && looked.current === id && onNewRun(run),
      () => {}, // the thread shows what it holds: a run that ends is shown on the next visit
    );
  }, [client, id, join, stream.isThreadLoading, stream.isLoading, onNewRun]);
  const joined = useRef(false);
  useEffect(() => {
    if (!join || join.thread_id !== id || joined.current) return;
    if (stream.isThreadLoading || stream.isLoading) return;
    joined.current = true;
    if (UNFINISHED.has(join.status)) stream.joinStream(join.run_id);
  }, [join, id, stream.isThreadLoading, stream.isLoading]);

  return (
    <div className="chat-layout">
      <section className="chat" aria-labelledby="chat-title">
        <h1 id="chat-title" className="visually-hidden" tabIndex={-1}>
          Chat
        </h1>
        <Messages stream={stream} waiting={toolsWait} />
        {gates.map((interrupt, index) => (
          <Gate
            key={interrupt.id ?? index}
            interrupt={interrupt}
            busy={stream.isLoading}
            onResume={(gate, decisions) => resume(gate, { decisions })}
          />
        ))}
        {connections.map((interrupt, index) => (
          <Connect
            key={interrupt.id ?? interrupt.value.flow_id ?? index}
            interrupt={interrupt}
            busy={stream.isLoading}
            onConnected={(request) => resume(request, { connected: true })}
          />
        ))}
        {stream.error ? (
          <Alert className="run-error">
            {failureOf(stream.error, runError.current)}: {describeError(stream.error)}
          </Alert>
        ) : null}
        <Composer stream={stream} />
        <p className="status" role="status" data-testid="status" data-loading={String(stream.isLoading)}>
          {status}
        </p>
      </section>
      <Files files={stream.values?.files} />
    </div>
  );
}

export function Chat({ id }) {
  // A run started elsewhere (the callback of a connection) mounts the stream anew: it reads
  // the thread's state from the server, then streams that run.
  const [followed, setFollowed] = useState({ mount: 0, run: null });
  const follow = useCallback((run) => setFollowed(({ mount }) => ({ mount: mount + 1, run })), []);
  return <Conversation key={followed.mount} id={id} join={followed.run} onNewRun={follow} />;
}
