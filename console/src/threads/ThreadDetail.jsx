// One thread: its current state (the messages, and every other key as JSON) and its
// checkpoint history as a timeline; "Continue in chat" and delete.
import { useEffect, useState } from "react";
import { describeError } from "../api.js";
import { useConsole } from "../context.js";
import { href, navigate } from "../route.js";
import { ConfirmDelete } from "./ConfirmDelete.jsx";
import { Messages } from "./Messages.jsx";
import { formatTime } from "./summary.js";
import { Timeline } from "./Timeline.jsx";

export const HISTORY_LIMIT = 50;

function JsonValue({ name, value }) {
  return (
    <details className="json">
      <summary>{name}</summary>
      <pre>{JSON.stringify(value, null, 2)}</pre>
    </details>
  );
}

export function ThreadDetail({ threadId }) {
  const { client } = useConsole();
  const [loaded, setLoaded] = useState(null);
  const [error, setError] = useState(null);

  useEffect(() => {
    let live = true;
    setLoaded(null);
    setError(null);
    Promise.all([
      client.threads.get(threadId),
      client.threads.getState(threadId),
      client.threads.getHistory(threadId, { limit: HISTORY_LIMIT }),
    ]).then(
      ([thread, state, history]) => live && setLoaded({ thread, state, history }),
      (failure) => live && setError(failure),
    );
    return () => {
      live = false;
    };
  }, [client, threadId]);

  const back = (
    <p>
      <a href={href("threads")}>← All threads</a>
    </p>
  );
  if (error) {
    const status = error.status ?? error.response?.status;
    return (
      <section className="thread" aria-labelledby="thread-title">
        <h1 id="thread-title">Thread</h1>
        {back}
        <p role="alert" className="error" data-testid="thread-error">
          {status === 404 || status === 422 ? `Thread ${threadId} not found.` : describeError(error)}
        </p>
      </section>
    );
  }
  if (!loaded) return <p className="status">Loading the thread…</p>;

  const { thread, state, history } = loaded;
  const { messages = [], ...others } = state.values || {};
  return (
    <section className="thread" aria-labelledby="thread-title">
      <h1 id="thread-title">Thread {thread.thread_id}</h1>
      {back}
      <dl className="facts">
        <dt>Status</dt>
        <dd>
          <span className={`badge ${thread.status}`} data-testid="thread-status">
            {thread.status}
          </span>
        </dd>
        <dt>Created</dt>
        <dd>{formatTime(thread.created_at)}</dd>
        <dt>Updated</dt>
        <dd>{formatTime(thread.updated_at)}</dd>
        {state.next?.length ? (
          <>
            <dt>Next</dt>
            <dd>{state.next.join(", ")}</dd>
          </>
        ) : null}
      </dl>
      {thread.status === "interrupted" ? (
        <p className="hint">The agent waits at an approval gate: continue in chat to answer it.</p>
      ) : null}
      <div className="actions">
        <a className="button" href={href("chat", thread.thread_id)}>
          Continue in chat
        </a>
        <ConfirmDelete
          label={`thread ${thread.thread_id}`}
          onDelete={async () => {
            await client.threads.delete(thread.thread_id);
            navigate("threads");
          }}
        />
      </div>
      <section aria-labelledby="state-title">
        <h2 id="state-title">State</h2>
        <Messages messages={messages} testId="state-messages" />
        {Object.entries(others).map(([key, value]) => (
          <JsonValue key={key} name={key} value={value} />
        ))}
        {Object.keys(thread.metadata || {}).length ? <JsonValue name="metadata" value={thread.metadata} /> : null}
      </section>
      <section aria-labelledby="timeline-title">
        <h2 id="timeline-title">Timeline</h2>
        <Timeline history={history} limit={HISTORY_LIMIT} />
      </section>
    </section>
  );
}
