// An approval gate: the run waits on a gated tool call (a human-in-the-loop request with
// `action_requests` and their `review_configs`). Each pending call shows with its arguments
// and the decisions its gate allows: approve, edit (its arguments, as JSON) or reject (with
// an optional message). Once every call has a decision the run resumes with them.
import { useEffect, useId, useRef, useState } from "react";
import { Alert } from "../Alert.jsx";
import { useAutoFocus } from "../focus.js";
import { pretty } from "./text.js";

const ALL_DECISIONS = ["approve", "edit", "reject"];
/** The decisions that open a form first. */
const FORMS = [
  { mode: "edit", label: "Edit", className: "secondary" },
  { mode: "reject", label: "Reject", className: "danger" },
];

function allowedFor(request, action) {
  const config = (request.review_configs ?? []).find((c) => c.action_name === action.name);
  return config?.allowed_decisions ?? ALL_DECISIONS;
}

/** langchain's default description: this prefix, then "Tool: <name>\nArgs: <args>". */
const DEFAULT_PREFIX = "Tool execution requires approval";
const REPEATED_CALL = /\n\s*Tool: [^\n]*\nArgs: [\s\S]*$/;

/** What the gate says of a call beyond what the card shows already (its name, and its
 * arguments once, as JSON): the default description repeats both, so says nothing more. */
export function descriptionOf(action) {
  const text = (action.description ?? "").replace(REPEATED_CALL, "").trim();
  return text === DEFAULT_PREFIX ? "" : text;
}

/** The arguments a person typed, or an error message saying why they are not a JSON object. */
export function parseArguments(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { error: `The arguments are not valid JSON: ${error.message}` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { error: "The arguments must be a JSON object ({…})." };
  }
  return { value };
}

function EditForm({ action, onDone, onCancel }) {
  const focus = useAutoFocus();
  const [text, setText] = useState(pretty(action.args));
  const [error, setError] = useState(null);
  const field = useId();
  const submit = (event) => {
    event.preventDefault();
    const parsed = parseArguments(text);
    if (parsed.error) setError(parsed.error);
    else onDone({ type: "edit", edited_action: { name: action.name, args: parsed.value } });
  };
  return (
    <form className="gate-form" aria-label={`Edit ${action.name}`} onSubmit={submit}>
      <label htmlFor={field}>Arguments (JSON)</label>
      <textarea
        id={field}
        rows={Math.min(16, text.split("\n").length + 1)}
        ref={focus}
        value={text}
        spellCheck={false}
        aria-invalid={Boolean(error)}
        onChange={(event) => {
          setText(event.target.value);
          setError(null);
        }}
      />
      {error ? <Alert>{error}</Alert> : null}
      <div className="gate-buttons">
        <button type="submit">Run with these arguments</button>
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function RejectForm({ action, onDone, onCancel }) {
  const focus = useAutoFocus();
  const [message, setMessage] = useState("");
  const field = useId();
  const submit = (event) => {
    event.preventDefault();
    onDone(message.trim() ? { type: "reject", message: message.trim() } : { type: "reject" });
  };
  return (
    <form className="gate-form" aria-label={`Reject ${action.name}`} onSubmit={submit}>
      <label htmlFor={field}>Message to the agent (optional)</label>
      <input id={field} value={message} ref={focus} onChange={(event) => setMessage(event.target.value)} />
      <div className="gate-buttons">
        <button type="submit" className="danger">
          Reject the call
        </button>
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function ActionReview({ action, allowed, decision, onDecide, busy }) {
  const [mode, setMode] = useState(null);
  const title = useId();
  // The opened form's field takes the focus (useAutoFocus); Cancel gives it back to its button.
  const buttons = { edit: useRef(null), reject: useRef(null) };
  const closed = useRef(null);
  useEffect(() => {
    if (mode === null && closed.current) buttons[closed.current].current?.focus();
    closed.current = null;
  });
  const cancel = () => {
    closed.current = mode;
    setMode(null);
  };
  const decide = (made) => {
    setMode(null);
    onDecide(made);
  };
  return (
    <article className="gate-action" aria-labelledby={title} data-testid="gate-action">
      <h3 id={title}>
        <code>{action.name}</code> waits for approval
      </h3>
      {descriptionOf(action) ? <p className="gate-description">{descriptionOf(action)}</p> : null}
      <pre aria-label={`Arguments of ${action.name}`}>{pretty(action.args)}</pre>
      {decision ? (
        <p className="gate-decided">Decision: {decision.type}</p>
      ) : mode === "edit" ? (
        <EditForm action={action} onDone={decide} onCancel={cancel} />
      ) : mode === "reject" ? (
        <RejectForm action={action} onDone={decide} onCancel={cancel} />
      ) : (
        <div className="gate-buttons">
          {allowed.includes("approve") ? (
            <button type="button" disabled={busy} onClick={() => decide({ type: "approve" })}>
              Approve
            </button>
          ) : null}
          {FORMS.filter(({ mode: opens }) => allowed.includes(opens)).map(({ mode: opens, label, className }) => (
            <button
              key={opens}
              type="button"
              className={className}
              ref={buttons[opens]}
              disabled={busy}
              onClick={() => setMode(opens)}
            >
              {label}
            </button>
          ))}
        </div>
      )}
    </article>
  );
}

/** True when `interrupt` is an approval gate's request (rather than another interrupt). */
export function isApprovalRequest(interrupt) {
  return Array.isArray(interrupt?.value?.action_requests);
}

export function Gate({ interrupt, onResume, busy }) {
  const request = interrupt.value;
  const actions = request.action_requests;
  const [decisions, setDecisions] = useState(() => actions.map(() => null));
  const title = useId();
  const decide = (index, decision) => {
    const next = decisions.map((made, i) => (i === index ? decision : made));
    setDecisions(next);
    if (next.every(Boolean)) onResume(interrupt, next);
  };
  return (
    <section className="gate panel" aria-labelledby={title} data-testid="gate">
      <h2 id={title}>Approval needed</h2>
      {actions.map((action, index) => (
        <ActionReview
          key={index}
          action={action}
          allowed={allowedFor(request, action)}
          decision={decisions[index]}
          busy={busy}
          onDecide={(decision) => decide(index, decision)}
        />
      ))}
    </section>
  );
}
