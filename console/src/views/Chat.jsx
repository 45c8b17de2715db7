// Chat with the agent on the official `useStream` hook: tokens as they stream, tool calls and
// subagent delegations (expandable), the files the agent wrote, errors, and approval gates.
// The thread is kept in the address (#/chat/<thread id>) so a reload comes back to it.
import { useStream } from "@langchain/langgraph-sdk/react";
import { useState } from "react";
import { describeError } from "../api.js";
import { Files } from "../chat/Files.jsx";
import { Gate, isApprovalRequest } from "../chat/Gate.jsx";
import { Messages } from "../chat/Messages.jsx";
import { useConsole } from "../context.js";
import { navigate } from "../route.js";

export { textOf } from "../chat/text.js";

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
          if (event.key === "Enter" && !event.shiftKey) send(event);
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

export function Chat({ id }) {
  const { info, client } = useConsole();
  const stream = useStream({
    client,
    assistantId: info.assistant_id ?? info.graph,
    threadId: id,
    onThreadId: (threadId) => navigate("chat", threadId, { replace: true }),
    reconnectOnMount: true,
    filterSubagentMessages: true,
    // With an `onFinish` the hook reloads the thread's head after each run: without it, a
    // gate or an error the page loaded with would outlive the run that answered it.
    onFinish: () => {},
  });
  const gates = stream.isLoading ? [] : stream.interrupts.filter(isApprovalRequest);
  const resume = (interrupt, decisions) =>
    stream.submit(null, {
      ...RUN,
      command: { resume: resumeValue(stream.interrupts, interrupt, decisions) },
    });
  return (
    <div className="chat-layout">
      <section className="chat" aria-labelledby="chat-title">
        <h1 id="chat-title" className="visually-hidden">
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
          <p role="alert" className="error run-error">
            The run failed: {describeError(stream.error)}
          </p>
        ) : null}
        <Composer stream={stream} />
        <p className="status" data-testid="status" data-loading={String(stream.isLoading)}>
          {stream.isLoading ? "The agent is working…" : gates.length ? "Waiting for your decision." : ""}
        </p>
      </section>
      <Files files={stream.values?.files} />
    </div>
  );
}
