// Chat with the agent on the official `useStream` hook: tokens as they stream, the thread
// kept in the address (#/chat/<thread id>) so a reload comes back to it.
import { useStream } from "@langchain/langgraph-sdk/react";
import { useState } from "react";
import { describeError } from "../api.js";
import { useConsole } from "../context.js";
import { navigate } from "../route.js";

export function textOf(message) {
  if (typeof message.content === "string") return message.content;
  return (message.content || [])
    .map((part) => (typeof part === "string" ? part : part.text || ""))
    .join("");
}

export function Chat({ id }) {
  const { info, client } = useConsole();
  const [draft, setDraft] = useState("");
  const stream = useStream({
    client,
    assistantId: info.assistant_id ?? info.graph,
    threadId: id,
    onThreadId: (threadId) => navigate("chat", threadId, { replace: true }),
    reconnectOnMount: true,
  });
  const send = (event) => {
    event.preventDefault();
    if (!draft.trim()) return;
    stream.submit({ messages: [{ type: "human", content: draft }] });
    setDraft("");
  };
  return (
    <section className="chat" aria-labelledby="chat-title">
      <h1 id="chat-title" className="visually-hidden">
        Chat
      </h1>
      <ol className="messages" aria-live="polite" data-testid="messages">
        {stream.messages.map((message, index) => (
          <li key={message.id || index} className={`message ${message.type}`} data-type={message.type}>
            {textOf(message)}
          </li>
        ))}
      </ol>
      {stream.error ? (
        <p role="alert" className="error">
          {describeError(stream.error)}
        </p>
      ) : null}
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
      <p className="status" data-testid="status" data-loading={String(stream.isLoading)}>
        {stream.isLoading ? "The agent is working…" : ""}
      </p>
    </section>
  );
}
