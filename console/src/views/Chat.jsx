// Chat with the agent on the official `useStream` hook: tokens as they stream, tool calls and
// subagent delegations (expandable), the files the agent wrote, errors, and approval gates.
// The thread is kept in the address (#/chat/<thread id>) so a reload comes back to it.
import { useStream } from "@langchain/langgraph-sdk/react";
import { useEffect, useRef, useState } from "react";
import { Alert } from "../Alert.jsx";
import { describeError } from "../api.js";
import { Files } from "../chat/Files.jsx";
import { Gate, isApprovalRequest } from "../chat/Gate.jsx";
import { Messages } from "../chat/Messages.jsx";
import { textOf } from "../chat/text.js";
import { useConsole } from "../context.js";
import { navigate } from "../route.js";

/** Submit options of every run: subagents stream their own messages too. */
const RUN = { streamSubgraphs: true };

/** The resume value answering `interrupt` with `decisions`: the decisions alone when it is
 * the only interrupt waiting, else keyed by its id. */
function resumeValue(interrupts, interrupt, decisions) {
  return interrupts.length > 1 && interrupt.id
    ? { [interrupt.id]: { decisions } }
    : { decisions };
}

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

/** The status line (announced): the agent works, waits for a decision, or has answered. */
function useStatus(stream, waiting) {
  const [answered, setAnswered] = useState(false); // a run of this page has ended
  const wasLoading = useRef(false);
  useEffect(() => {
    if (wasLoading.current !== stream.isLoading) setAnswered(!stream.isLoading);
    wasLoading.current = stream.isLoading;
  }, [stream.isLoading]);
  if (stream.isLoading) return "The agent is working…";
  if (waiting) return "Waiting for your decision.";
  const last = answered ? stream.messages.findLast((message) => message.type === "ai" && textOf(message)) : null;
  if (!last) return "";
  return (
    <>
      The agent answered.<span className="visually-hidden"> {textOf(last)}</span>
    </>
  );
}

export function Chat({ id }) {
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
  const gates = stream.isLoading ? [] : stream.interrupts.filter(isApprovalRequest);
  const status = useStatus(stream, gates.length > 0);
  const resume = (interrupt, decisions) =>
    stream.submit(null, {
      ...RUN,
      command: { resume: resumeValue(stream.interrupts, interrupt, decisions) },
    });
  return (
    <div className="chat-layout">
      <section className="chat" aria-labelledby="chat-title">
        <h1 id="chat-title" className="visually-hidden" tabIndex={-1}>
          Chat
        </h1>
        <Messages stream={stream} waiting={gates.length > 0} />
        {gates.map((interrupt, index) => (
          <Gate
            key={interrupt.id ?? index}
            interrupt={interrupt}
            busy={stream.isLoading}
            onResume={resume}
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
