// The chats beside the conversation: New chat, a search over their titles, and the caller's
// latest threads (title: the thread's metadata `title`, else its first message), newest first.
// On a phone the list folds behind a "Chats" button.
import { useEffect, useState } from "react";
import { describeError, request } from "../api.js";
import { useConsole } from "../context.js";
import { href } from "../route.js";
import { titleOf } from "../threads/summary.js";

const LIMIT = 50;

/** What a thread is called in the list. */
export function chatTitle(thread) {
  const given = thread.metadata?.title;
  if (typeof given === "string" && given.trim()) return given.trim();
  const title = titleOf(thread);
  return title === "(no message yet)" ? "New chat" : title;
}

function useThreads(version) {
  const { credentials } = useConsole();
  const [threads, setThreads] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let current = true;
    request(credentials, "/threads/search", {
      method: "POST",
      body: {
        limit: LIMIT,
        sort_by: "updated_at",
        sort_order: "desc",
        select: ["thread_id", "updated_at", "metadata"],
        extract: { title: "values.messages[0].content" },
      },
    }).then(
      (found) => current && (setThreads(found), setError(null)),
      (failure) => current && setError(describeError(failure)),
    );
    return () => {
      current = false;
    };
  }, [credentials, version]);
  return [threads, error];
}

/** `current`: the open thread's id; `version`: changes when the list may have (a new chat, an
 * answer); `onNewChat()`: starts a new chat. */
export function ChatThreads({ current, version, onNewChat }) {
  const [threads, error] = useThreads(version);
  const [query, setQuery] = useState("");
  const [open, setOpen] = useState(false);
  const words = query.trim().toLowerCase();
  const shown = (threads ?? [])
    .map((thread) => ({ id: thread.thread_id, title: chatTitle(thread) }))
    .filter((thread) => !words || thread.title.toLowerCase().includes(words));
  return (
    <nav className={`chat-threads${open ? " open" : ""}`} aria-label="Chats">
      <div className="chat-threads-head">
        <button
          type="button"
          className="secondary chat-threads-toggle"
          aria-expanded={open}
          aria-controls="chat-thread-list"
          onClick={() => setOpen(!open)}
        >
          Chats
        </button>
        <button type="button" onClick={onNewChat} aria-keyshortcuts="Alt+Shift+N" title="New chat (Alt+Shift+N)">
          New chat
        </button>
      </div>
      <div id="chat-thread-list" className="chat-thread-list">
        <label className="visually-hidden" htmlFor="chat-search">
          Search chats
        </label>
        <input
          id="chat-search"
          type="search"
          placeholder="Search chats"
          autoComplete="off"
          value={query}
          onChange={(event) => setQuery(event.target.value)}
        />
        {error ? <p className="error">Loading the chats failed: {error}</p> : null}
        {threads && !shown.length ? <p className="empty">{words ? "No chat matches." : "No chats yet."}</p> : null}
        <ul>
          {shown.map((thread) => (
            <li key={thread.id}>
              <a
                href={href("chat", thread.id)}
                aria-current={thread.id === current ? "page" : undefined}
                onClick={() => setOpen(false)}
              >
                {thread.title}
              </a>
            </li>
          ))}
        </ul>
      </div>
    </nav>
  );
}
