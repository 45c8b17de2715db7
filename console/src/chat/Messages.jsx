// The conversation: people's and the agent's messages, each AI message followed by its tool
// calls and delegations (a tool's result shows inside its call, not as a message of its own).
import { Subagent } from "./Subagent.jsx";
import { textOf } from "./text.js";
import { ToolCall } from "./ToolCall.jsx";

const SUBAGENT_TOOLS = new Set(["task"]);

function ToolCalls({ stream, subagents, message, waiting }) {
  const calls = stream.getToolCalls(message);
  if (!calls.length) return null;
  return (
    <li className="tool-calls">
      <ul aria-label="Tool calls">
        {calls.map((toolCall) => (
          <li key={toolCall.id}>
            {SUBAGENT_TOOLS.has(toolCall.call.name) ? (
              <Subagent toolCall={toolCall} subagent={subagents.get(toolCall.id)} />
            ) : (
              <ToolCall toolCall={toolCall} waiting={waiting} />
            )}
          </li>
        ))}
      </ul>
    </li>
  );
}

/** `waiting`: what the run waits for ("approval", "a connection"), or null. */
export function Messages({ stream, waiting = null }) {
  // Read on every render, before any run: the hook streams the modes its getters were read
  // for, and subagents need `updates` from the first run on.
  const subagents = stream.subagents;
  return (
    // Not a live region (it would read every streamed token): busy while the agent writes;
    // the chat's status line announces the answer once it is whole.
    <ol className="messages" aria-busy={stream.isLoading} data-testid="messages">
      {stream.messages.map((message, index) => {
        if (message.type === "tool") return null;
        const text = textOf(message);
        const key = message.id || index;
        return [
          text || message.type !== "ai" ? (
            <li key={key} className={`message ${message.type}`} data-type={message.type}>
              {text}
            </li>
          ) : null,
          message.type === "ai" ? (
            <ToolCalls
              key={`${key}-tools`}
              stream={stream}
              subagents={subagents}
              message={message}
              waiting={waiting}
            />
          ) : null,
        ];
      })}
    </ol>
  );
}
