// A thread's checkpoints, newest first: step, the node that wrote it and the ones next, when,
// and what changed since the one before — each expandable to its values.
import { pretty } from "../chat/text.js";
import { Time } from "../time.jsx";
import { changesOf } from "./summary.js";
import { ThreadMessages } from "./ThreadMessages.jsx";

export function Timeline({ history, limit }) {
  if (!history.length) return <p className="empty">No checkpoints yet.</p>;
  return (
    <>
      <ol className="timeline" data-testid="timeline">
        {history.map((entry, index) => {
          const { added, changed } = changesOf(entry.values, history[index + 1]?.values);
          const writes = Object.keys(entry.metadata?.writes || {});
          return (
            <li key={entry.checkpoint?.checkpoint_id ?? index} className="checkpoint">
              <p className="checkpoint-head">
                <strong>Step {entry.metadata?.step ?? "?"}</strong>
                {entry.metadata?.source ? <span>source: {entry.metadata.source}</span> : null}
                {writes.length ? <span>by {writes.join(", ")}</span> : null}
                {entry.next?.length ? <span>next: {entry.next.join(", ")}</span> : <span>next: —</span>}
                <Time value={entry.created_at} />
              </p>
              {added.length ? (
                <>
                  <p className="changed">
                    {added.length} message{added.length === 1 ? "" : "s"} added
                  </p>
                  <ThreadMessages messages={added} />
                </>
              ) : null}
              {changed.length ? <p className="changed">Changed: {changed.join(", ")}</p> : null}
              <details>
                <summary>Values at this checkpoint</summary>
                <pre>{pretty(entry.values)}</pre>
              </details>
            </li>
          );
        })}
      </ol>
      {history.length >= limit ? <p className="status">Showing the latest {limit} checkpoints.</p> : null}
    </>
  );
}
