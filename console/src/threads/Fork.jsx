// Time travel's two edits, each at a checkpoint: a message of yours sent again in other
// words (a run from the checkpoint before it), or the state's values edited as JSON (a
// state update at the checkpoint, then optionally a run on from it). Either starts a new
// branch beside the old one, which stays.
import { useId, useState } from "react";
import { Alert } from "../Alert.jsx";
import { useAutoFocus } from "../focus.js";
import { pretty, textOf } from "../chat/text.js";

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** The update turning `before` into `after`: the keys whose value changed and, of the
 * messages, those new or changed (the messages reducer replaces a message by its id). */
export function stateChanges(before, after) {
  const update = {};
  for (const [key, value] of Object.entries(after)) {
    if (key === "messages" && Array.isArray(value)) {
      const old = new Map((before.messages ?? []).map((message) => [message.id, message]));
      const changed = value.filter((message) => !message?.id || !same(old.get(message.id), message));
      if (changed.length) update.messages = changed;
    } else if (!same(value, before[key])) update[key] = value;
  }
  return update;
}

/** The values a person typed, or an error message saying why they cannot be. */
export function parseValues(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { error: `The values are not valid JSON: ${error.message}` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { error: "The values must be a JSON object ({…})." };
  }
  return { value };
}

function Buttons({ children, onCancel, busy }) {
  return (
    <div className="fork-buttons">
      {children}
      <button type="button" className="secondary" disabled={busy} onClick={onCancel}>
        Cancel
      </button>
    </div>
  );
}

/** Send `message` (a human message) again, edited: `onRun(text)`. */
export function EditMessage({ message, onRun, onCancel, busy }) {
  const focus = useAutoFocus();
  const [text, setText] = useState(textOf(message));
  const [error, setError] = useState(null);
  const field = useId();
  const submit = (event) => {
    event.preventDefault();
    if (!text.trim()) setError("Write the message to send.");
    else onRun(text);
  };
  return (
    <form className="fork-form" aria-label="Edit the message" onSubmit={submit}>
      <label htmlFor={field}>Your message, edited</label>
      <textarea
        id={field}
        rows={Math.min(10, text.split("\n").length + 1)}
        ref={focus}
        value={text}
        aria-invalid={Boolean(error)}
        onChange={(event) => {
          setText(event.target.value);
          setError(null);
        }}
      />
      {error ? <Alert>{error}</Alert> : null}
      <Buttons onCancel={onCancel} busy={busy}>
        <button type="submit" disabled={busy}>
          Run from here
        </button>
      </Buttons>
    </form>
  );
}

/** Edit the values at a checkpoint: `onSave(update, {run})` with only what changed. */
export function EditState({ values, onSave, onCancel, busy }) {
  const focus = useAutoFocus();
  const [text, setText] = useState(pretty(values));
  const [error, setError] = useState(null);
  const field = useId();
  const save = (run) => {
    const parsed = parseValues(text);
    if (parsed.error) return setError(parsed.error);
    const update = stateChanges(values ?? {}, parsed.value);
    if (!Object.keys(update).length) return setError("Nothing changed: edit a value first.");
    onSave(update, { run });
  };
  return (
    <form
      className="fork-form"
      aria-label="Edit the state"
      onSubmit={(event) => {
        event.preventDefault();
        save(true);
      }}
    >
      <label htmlFor={field}>Values at this checkpoint (JSON)</label>
      <textarea
        id={field}
        rows={Math.min(18, text.split("\n").length + 1)}
        ref={focus}
        spellCheck={false}
        value={text}
        aria-invalid={Boolean(error)}
        onChange={(event) => {
          setText(event.target.value);
          setError(null);
        }}
      />
      {error ? <Alert>{error}</Alert> : null}
      <Buttons onCancel={onCancel} busy={busy}>
        <button type="submit" disabled={busy}>
          Save and run from here
        </button>
        <button type="button" className="secondary" disabled={busy} onClick={() => save(false)}>
          Save as a branch
        </button>
      </Buttons>
    </form>
  );
}
