// One thread: its current state (the messages, and every other key as JSON) and its
// checkpoint history as a timeline; "Continue in chat" and delete.
import { Alert } from "../Alert.jsx";
import { describeError } from "../api.js";
import { pretty } from "../chat/text.js";
import { useConsole } from "../context.js";
import { href, navigate } from "../route.js";
import { Time } from "../time.jsx";
import { useRequest } from "../useRequest.js";
import { ConfirmDelete } from "./ConfirmDelete.jsx";
import { ThreadMessages } from "./ThreadMessages.jsx";
import { Timeline } from "./Timeline.jsx";

export const HISTORY_LIMIT = 50;

function JsonValue({ name, value }) {
  return (
    <details className="json">
      <summary>{name}</summary>
      <pre>{pretty(value)}</pre>
    </details>
  );
}

async function loadThread(client, threadId) {
  const [thread, state, history] = await Promise.all([
    client.threads.get(threadId),
    client.threads.getState(threadId),
    client.threads.getHistory(threadId, { limit: HISTORY_LIMIT }),
  ]);
  return { thread, state, history };
}

export function ThreadDetail({ threadId }) {
  const { client } = useConsole();
  const { data: loaded, error } = useRequest(() => loadThread(client, threadId), [client, threadId]);

  const back = (
    <p>
      <a href={href("threads")}>← All threads</a>
    </p>
  );
  if (error) {
    const status = error.status ?? error.response?.status;
    return (
      <section className="thread" aria-labelledby="thread-title">
        <h1 id="thread-title" tabIndex={-1}>
          Thread
        </h1>
        {back}
        <Alert testId="thread-error">
          {status === 404 || status === 422 ? `Thread ${threadId} not found.` : describeError(error)}
        </Alert>
      </section>
    );
  }
  if (!loaded) return <p className="status">Loading the thread…</p>;

  const { thread, state, history } = loaded;
  const { messages = [], ...others } = state.values || {};
  return (
    <section className="thread" aria-labelledby="thread-title">
      <h1 id="thread-title" tabIndex={-1}>
        Thread {thread.thread_id}
      </h1>
      {back}
      <dl className="facts">
        <dt>Status</dt>
        <dd>
          <span className={`badge ${thread.status}`} data-testid="thread-status">
            {thread.status}
          </span>
        </dd>
        <dt>Created</dt>
        <dd>
          <Time value={thread.created_at} />
        </dd>
        <dt>Updated</dt>
        <dd>
          <Time value={thread.updated_at} />
        </dd>
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
        <ThreadMessages messages={messages} testId="state-messages" />
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
