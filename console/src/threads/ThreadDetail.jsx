// One thread: its state (the messages, and every other key as JSON) at the end of the branch
// shown, its runs (each with its trace) and its checkpoint history as a timeline, from which
// a person edits a message or the state and runs again (a new branch; the old ones stay and
// a switch shows each); "Continue in chat" and delete.
import { useMemo, useState } from "react";
import { Alert } from "../Alert.jsx";
import { describeError } from "../api.js";
import { pretty } from "../chat/text.js";
import { useConsole } from "../context.js";
import { href, navigate } from "../route.js";
import { Time } from "../time.jsx";
import { useRequest } from "../useRequest.js";
import { forkPointOf, forksOn, pathTo, treeOf } from "./branches.js";
import { ConfirmDelete } from "./ConfirmDelete.jsx";
import { RunList } from "./RunList.jsx";
import { ThreadMessages } from "./ThreadMessages.jsx";
import { Timeline } from "./Timeline.jsx";

export const HISTORY_LIMIT = 200;

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

/** Runs from a checkpoint and what they say while they run: `{busy, status, error, run}`. */
function useTimeTravel(client, thread, assistantId, reload, setHead) {
  const [work, setWork] = useState({ busy: false, status: "", error: null });
  const threadId = thread?.thread_id;
  const go = async (doing, act) => {
    setWork({ busy: true, status: doing, error: null });
    try {
      const said = await act();
      await reload();
      setHead(null); // the newest checkpoint: the branch just made
      setWork({ busy: false, status: said, error: null });
    } catch (error) {
      await reload();
      setWork({ busy: false, status: "", error });
    }
  };
  /** A run from `checkpointId` with `input`; what it ended as, in words. */
  const runFrom = async (checkpointId, input) => {
    const run = await client.runs.create(threadId, assistantId, { input, checkpointId });
    await client.runs.join(threadId, run.run_id);
    const ended = await client.runs.get(threadId, run.run_id);
    if (ended.status === "error") throw new Error("The run from there failed: see Runs for its error.");
    return ended.status === "interrupted" ? "The new branch waits at an approval gate." : "The new branch is shown.";
  };
  const editMessage = (step, text) =>
    go(`Running from step ${step.entry.metadata?.step ?? "?"} with your edited message…`, () =>
      runFrom(forkPointOf(step), { messages: [{ type: "human", content: text }] }),
    );
  const editState = (step, values, { run }) =>
    go(run ? "Saving the state and running from it…" : "Saving the state…", async () => {
      const { checkpoint } = await client.threads.updateState(threadId, { values, checkpointId: step.id });
      if (!run) return "Saved as a new branch.";
      const saved = await client.threads.getState(threadId, checkpoint.checkpoint_id);
      if (!saved.next?.length) return "Saved as a new branch; nothing runs after it.";
      return runFrom(checkpoint.checkpoint_id, null);
    });
  return { work, editMessage, editState };
}

export function ThreadDetail({ threadId }) {
  const { client, info } = useConsole();
  const { data: loaded, error, reload } = useRequest(() => loadThread(client, threadId), [client, threadId]);
  const [head, setHead] = useState(null); // the checkpoint the branch shown ends at; null: the newest
  const history = loaded?.history;
  const tree = useMemo(() => treeOf(history ?? []), [history]);
  const path = useMemo(() => pathTo(tree, head), [tree, head]);
  const forks = useMemo(() => forksOn(tree, path), [tree, path]);
  const assistantId = loaded?.thread.metadata?.assistant_id ?? info.assistant_id ?? info.graph;
  const { work, editMessage, editState } = useTimeTravel(client, loaded?.thread, assistantId, reload, setHead);

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

  const { thread, state } = loaded;
  const shown = path[0] ?? state; // the end of the branch shown
  const latest = !head || head === tree.newest?.checkpoint?.checkpoint_id;
  const { messages = [], ...others } = shown.values || {};
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
        {shown.next?.length ? (
          <>
            <dt>Next</dt>
            <dd>{shown.next.join(", ")}</dd>
          </>
        ) : null}
        {forks.size || !latest ? (
          <>
            <dt>Branch</dt>
            <dd data-testid="branch">
              {latest ? "the latest" : "an earlier one"}
              {latest ? null : (
                <>
                  {" "}
                  <button type="button" className="secondary small" onClick={() => setHead(null)}>
                    Show the latest branch
                  </button>
                </>
              )}
            </dd>
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
        <h2 id="state-title">{latest ? "State" : "State at the end of this branch"}</h2>
        <ThreadMessages messages={messages} testId="state-messages" />
        {Object.entries(others).map(([key, value]) => (
          <JsonValue key={key} name={key} value={value} />
        ))}
        {Object.keys(thread.metadata || {}).length ? <JsonValue name="metadata" value={thread.metadata} /> : null}
      </section>
      <section aria-labelledby="runs-title">
        <h2 id="runs-title">Runs</h2>
        <RunList threadId={thread.thread_id} />
      </section>
      <section aria-labelledby="timeline-title">
        <h2 id="timeline-title">Timeline</h2>
        <p className="status" role="status" data-testid="time-travel" data-busy={String(work.busy)}>
          {work.status}
        </p>
        <Alert error={work.error} />
        <Timeline
          tree={tree}
          path={path}
          forks={forks}
          total={history.length}
          limit={HISTORY_LIMIT}
          busy={work.busy}
          onSwitch={setHead}
          onEditMessage={editMessage}
          onEditState={editState}
        />
      </section>
    </section>
  );
}
