// A thread's checkpoints on the branch shown, newest first: the agent's own steps (your
// messages, the model, tools, subagents, approvals, edits) and, on demand, its middleware's;
// what each changed, its values, and time travel from it: edit a message of yours or the
// state there and run again. Where branches part, a switch shows each in turn.
import { useId, useState } from "react";
import { pretty } from "../chat/text.js";
import { Time } from "../time.jsx";
import { AGENT_KINDS, describe } from "./branches.js";
import { EditMessage, EditState } from "./Fork.jsx";
import { gistOf } from "./summary.js";
import { ThreadMessages } from "./ThreadMessages.jsx";
import "./timeline.css";

const KIND_LABELS = {
  input: "Your message",
  model: "Model",
  tools: "Tools",
  subagent: "Subagent",
  approval: "Approval",
  edit: "Edited",
  node: "Node",
  messages: "Middleware",
  middleware: "Middleware",
};

function BranchSwitch({ fork, step, onSwitch, busy }) {
  const { branches, chosen } = fork;
  const label = useId();
  const go = (index) => onSwitch(branches[index].head);
  return (
    <li className="fork" role="group" aria-labelledby={label} data-testid="fork">
      <span id={label}>
        Branch {chosen + 1} of {branches.length}, from step {step}
      </span>
      <button type="button" className="secondary" disabled={busy || chosen <= 0} onClick={() => go(chosen - 1)}>
        ‹ Previous branch
      </button>
      <button
        type="button"
        className="secondary"
        disabled={busy || chosen >= branches.length - 1}
        onClick={() => go(chosen + 1)}
      >
        Next branch ›
      </button>
    </li>
  );
}

/** `detailed`: every step is shown, each with the node that wrote it and the ones next. */
function Step({ step, detailed, editing, setEditing, onEditMessage, onEditState, busy }) {
  const { entry, kind, writer, added, changed, interrupts } = step;
  const number = entry.metadata?.step ?? "?";
  const editMessage = (message) =>
    message.type === "human" && step.parentId ? (
      <button
        type="button"
        className="secondary small"
        disabled={busy}
        aria-label={`Edit message “${gistOf(message).slice(0, 40)}”`}
        onClick={() => setEditing({ id: step.id, message })}
      >
        Edit
      </button>
    ) : null;
  const open = editing?.id === step.id ? editing : null;
  return (
    <li className={`checkpoint ${kind}`} data-kind={kind} data-step={number} data-checkpoint={step.id}>
      <p className="checkpoint-head">
        <span className={`cp-kind ${kind}`}>{kind === "node" ? writer : KIND_LABELS[kind]}</span>
        <strong>Step {number}</strong>
        {writer && (detailed || kind === "middleware" || kind === "messages") ? <span>by {writer}</span> : null}
        {entry.metadata?.source && entry.metadata.source !== "loop" ? <span>source: {entry.metadata.source}</span> : null}
        {detailed ? <span>next: {entry.next?.length ? entry.next.join(", ") : "—"}</span> : null}
        <Time value={entry.created_at} />
      </p>
      {interrupts.length ? (
        <p className="changed">
          Waited for {interrupts.some((i) => i.value?.action_requests) ? "approval" : "an answer"}
        </p>
      ) : null}
      {added.length ? (
        <>
          <p className="changed">
            {added.length} message{added.length === 1 ? "" : "s"} added
          </p>
          <ThreadMessages messages={added} actionsOf={editMessage} />
        </>
      ) : null}
      {changed.length ? <p className="changed">Changed: {changed.join(", ")}</p> : null}
      {open?.message ? (
        <EditMessage
          message={open.message}
          busy={busy}
          onCancel={() => setEditing(null)}
          onRun={(text) => onEditMessage(step, text)}
        />
      ) : open?.state ? (
        <EditState
          values={entry.values}
          busy={busy}
          onCancel={() => setEditing(null)}
          onSave={(update, options) => onEditState(step, update, options)}
        />
      ) : (
        <div className="checkpoint-actions">
          <details>
            <summary>Values at this checkpoint</summary>
            <pre>{pretty(entry.values)}</pre>
          </details>
          <button
            type="button"
            className="secondary small"
            disabled={busy}
            onClick={() => setEditing({ id: step.id, state: true })}
          >
            Edit state
          </button>
        </div>
      )}
    </li>
  );
}

/** `path`: the branch shown, newest first; `forks`: its fork points (branches.forksOn). */
export function Timeline({ tree, path, forks, limit, total, onSwitch, onEditMessage, onEditState, busy }) {
  const [showAll, setShowAll] = useState(false);
  const [editing, setEditing] = useState(null);
  const toggle = useId();
  if (!path.length) return <p className="empty">No checkpoints yet.</p>;
  const steps = path.map((entry) => ({ ...describe(tree, entry), parentId: entry.parent_checkpoint?.checkpoint_id }));
  const hidden = steps.filter((step) => !AGENT_KINDS.has(step.kind)).length;
  const items = [];
  for (const step of steps) {
    const fork = forks.get(step.id);
    if (fork) {
      items.push(
        <BranchSwitch
          key={`fork-${step.id}`}
          fork={fork}
          step={step.entry.metadata?.step ?? "?"}
          onSwitch={onSwitch}
          busy={busy}
        />,
      );
    }
    if (showAll || AGENT_KINDS.has(step.kind) || editing?.id === step.id) {
      items.push(
        <Step
          key={step.id}
          step={step}
          detailed={showAll}
          editing={editing}
          setEditing={setEditing}
          onEditMessage={onEditMessage}
          onEditState={onEditState}
          busy={busy}
        />,
      );
    }
  }
  return (
    <>
      <p className="timeline-filter">
        <input id={toggle} type="checkbox" checked={showAll} onChange={(event) => setShowAll(event.target.checked)} />
        <label htmlFor={toggle}>
          Show middleware steps ({hidden} {showAll ? "shown" : "hidden"})
        </label>
      </p>
      <ol className="timeline" data-testid="timeline">
        {items}
      </ol>
      {total >= limit ? <p className="status">Showing the latest {limit} checkpoints.</p> : null}
    </>
  );
}
