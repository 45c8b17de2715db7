// One tool call of the agent: its name, arguments and result (the ToolMessage answering it).
import { Disclosure } from "./Disclosure.jsx";
import { pretty, textOf } from "./text.js";

const STATES = {
  pending: "running",
  waiting: "waiting for approval",
  completed: "done",
  error: "failed",
};

export function ToolResult({ result }) {
  if (!result) return <p className="muted">No result yet.</p>;
  return (
    <>
      <h3 className="tool-heading">Result</h3>
      <pre className={result.status === "error" ? "error" : undefined}>{textOf(result)}</pre>
    </>
  );
}

/** `waiting`: the run waits at an approval gate, so a call without result waits on it. */
export function ToolCall({ toolCall, waiting = false }) {
  const { call, result } = toolCall;
  const state = waiting && toolCall.state === "pending" ? "waiting" : toolCall.state;
  return (
    <Disclosure
      className="tool-call"
      testId="tool-call"
      label={
        <>
          <span className="tool-kind">Tool</span> <code>{call.name}</code>{" "}
          <span className={`tool-state ${state}`}>{STATES[state] ?? state}</span>
        </>
      }
    >
      <h3 className="tool-heading">Arguments</h3>
      <pre>{pretty(call.args)}</pre>
      <ToolResult result={result} />
    </Disclosure>
  );
}
