// A chat page on the official React hook, as an app would write it: `useStream` with
// `reconnectOnMount` (the run id is kept in sessionStorage by the hook; the thread id is kept
// in the address by this page, so a reload comes back to the same thread).
// Query parameters: `api` (default: this page's origin), `assistant` (default: "agent"),
// `subagents=1`: a deep agent's page (`filterSubagentMessages`: the subagents' messages are
// not in the conversation, each subagent shows in its own card; runs stream subgraphs; the
// thread's history is read, so a reload shows the cards again).
import React, { useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";

const query = new URLSearchParams(window.location.search);
const API_URL = query.get("api") || window.location.origin;
const ASSISTANT = query.get("assistant") || "agent";
const SUBAGENTS = query.get("subagents") === "1";

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
    filterSubagentMessages: SUBAGENTS,
    fetchStateHistory: SUBAGENTS, // what the hook reads a subagent's card back from
  });
  const send = (event) => {
    event.preventDefault();
    stream.submit(
      { messages: [{ type: "human", content: draft }] },
      SUBAGENTS ? { streamSubgraphs: true } : undefined,
    );
    setDraft("");
  };
  return (
    <main>
      <form onSubmit={send}>
        <textarea id="prompt" value={draft} onChange={(event) => setDraft(event.target.value)} />
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
      {SUBAGENTS ? (
        <ul id="subagents">
          {[...stream.subagents.values()].map((subagent) => (
            <li
              key={subagent.id}
              data-call={subagent.id}
              data-type={subagent.toolCall.args.subagent_type || ""}
              data-status={subagent.status}
              data-task={subagent.toolCall.args.description || ""}
            >
              {subagent.messages
                .filter((message) => message.type === "ai")
                .map(text)
                .join("")}
            </li>
          ))}
        </ul>
      ) : null}
      {stream.error ? <pre id="error">{String(stream.error.message || stream.error)}</pre> : null}
    </main>
  );
}

createRoot(document.getElementById("root")).render(<Chat />);
