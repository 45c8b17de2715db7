// A delegation to a subagent (the deep agent's `task` tool): which subagent, the task it was
// given, its own messages while they stream (the SDK's subagent streams), and its result.
import { Disclosure } from "./Disclosure.jsx";
import { textOf } from "./text.js";
import { ToolCall, ToolResult } from "./ToolCall.jsx";

// What the subagent said (its AI messages) and the tools it called, as they streamed. (Its
// result, which the stream also files under its namespace, shows below as the task's result.)
function SubagentMessages({ subagent }) {
  const said = (subagent?.messages ?? []).filter(
    (message) => message.type === "ai" && textOf(message),
  );
  const calls = subagent?.toolCalls ?? [];
  if (!said.length && !calls.length) return null;
  return (
    <>
      <h3 className="tool-heading">Its messages</h3>
      <ol className="subagent-messages" data-testid="subagent-messages">
        {said.map((message, index) => (
          <li key={message.id || index} className="message ai">
            {textOf(message)}
          </li>
        ))}
        {calls.map((toolCall) => (
          <li key={toolCall.id}>
            <ToolCall toolCall={toolCall} />
          </li>
        ))}
      </ol>
    </>
  );
}

export function Subagent({ toolCall, subagent }) {
  const { call, result } = toolCall;
  const name = call.args?.subagent_type ?? "subagent";
  const status = subagent?.status ?? (result ? "complete" : "pending");
  return (
    <Disclosure
      className="subagent"
      testId="subagent"
      label={
        <>
          <span className="tool-kind">Subagent</span> <strong>{name}</strong>{" "}
          <span className={`tool-state ${status}`}>{status}</span>
        </>
      }
    >
      <h3 className="tool-heading">Task</h3>
      <pre>{call.args?.description ?? ""}</pre>
      <SubagentMessages subagent={subagent} />
      <ToolResult result={result} />
    </Disclosure>
  );
}
