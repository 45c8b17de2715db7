// A chat page on the official React hook, as an app would write it: `useStream` with
// `reconnectOnMount` (the run id is kept in sessionStorage by the hook; the thread id is kept
// in the address by this page, so a reload comes back to the same thread).
// Query parameters: `api` (default: this page's origin), `assistant` (default: "agent").
import React, { useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";

const query = new URLSearchParams(window.location.search);
const API_URL = query.get("api") || window.location.origin;
const ASSISTANT = query.get("assistant") || "agent";

function text(message) {
  if (typeof message.content === "string") return message.content;
  return (message.content || [])
    .map((part) => (typeof part === "string" ? part : part.text || ""))
    .join("");
}

function rememberThread(threadId) {
  const url = new URL(window.location.href);
  url.searchParams.set("thread", threadId);
  window.history.replaceState(null, "", url);
}

function Chat() {
  const [threadId, setThreadId] = useState(query.get("thread"));
  const [draft, setDraft] = useState("");
  const stream = useStream({
    apiUrl: API_URL,
    assistantId: ASSISTANT,
    threadId,
    onThreadId: (id) => {
      setThreadId(id);
      rememberThread(id);
    },
    reconnectOnMount: true,
  });
  const send = (event) => {
    event.preventDefault();
    stream.submit({ messages: [{ type: "human", content: draft }] });
    setDraft("");
  };
  return (
    <main>
      <form onSubmit={send}>
        <input id="prompt" value={draft} onChange={(event) => setDraft(event.target.value)} />
        <button id="send" type="submit">Send</button>
      </form>
      <p id="status" data-loading={String(stream.isLoading)} data-thread={threadId || ""}>
        {stream.isLoading ? "working…" : "idle"}
      </p>
      <ul id="messages">
        {stream.messages.map((message, index) => (
          <li key={message.id || index} data-type={message.type}>
            {text(message)}
          </li>
        ))}
      </ul>
      {stream.error ? <pre id="error">{String(stream.error.message || stream.error)}</pre> : null}
    </main>
  );
}

createRoot(document.getElementById("root")).render(<Chat />);
