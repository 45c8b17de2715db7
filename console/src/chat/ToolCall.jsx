// One tool call of the agent: its name, arguments and result (the ToolMessage answering it).
import { Disclosure } from "./Disclosure.jsx";
import { isRejection } from "./rejection.js";
import { pretty, textOf } from "./text.js";

const STATES = {
  pending: "running",
  completed: "done",
  error: "failed",
  rejected: "rejected",
};

export function ToolResult({ result }) {
  if (!result) return <p className="muted">No result yet.</p>;
  return (
    <>
      <h3 className="tool-heading">Result</h3>
      <pre className={result.status === "error" && !isRejection(result) ? "error" : undefined}>{textOf(result)}</pre>
    </>
  );
}

/** `waiting`: what the run waits for ("approval" at a gate, "a connection"…), so a call
 * without result waits on it; null when the run waits for nothing. */
export function ToolCall({ toolCall, waiting = null }) {
  const { call, result } = toolCall;
  let state = waiting && toolCall.state === "pending" ? "waiting" : toolCall.state;
  if (isRejection(result)) state = "rejected";
  const label = state === "waiting" ? `waiting for ${waiting}` : (STATES[state] ?? state);
  return (
    <Disclosure
      className="tool-call"
      testId="tool-call"
      label={
        <>
          <span className="tool-kind">Tool</span> <code>{call.name}</code>{" "}
          <span className={`tool-state ${state}`}>{label}</span>
        </>
      }
    >
      <h3 className="tool-heading">Arguments</h3>
      <pre>{pretty(call.args)}</pre>
      <ToolResult result={result} />
    </Disclosure>
  );
}
