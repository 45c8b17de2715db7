// The conversation: people's and the agent's messages, each AI message followed by its tool
// calls and delegations (a tool's result shows inside its call, not as a message of its own).
import { Markdown } from "./Markdown.jsx";
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

/** An answer the person stopped: what the agent had written, marked as cut short. */
function Stopped({ message }) {
  return (
    <li className="message ai stopped" data-type="ai" data-stopped="true">
      <Markdown text={textOf(message)} />
      <p className="stopped-note">Stopped: the answer is incomplete.</p>
    </li>
  );
}

/** `waiting`: what the run waits for ("approval", "a connection"), or null; `kept`: the
 * partial answers of stopped runs (`{afterId, message}`), shown after the message `afterId`
 * unless the thread holds them itself. */
export function Messages({ stream, waiting = null, kept = [] }) {
  // Read on every render, before any run: the hook streams the modes its getters were read
  // for, and subagents need `updates` from the first run on.
  const subagents = stream.subagents;
  const held = new Set(stream.messages.map((message) => message.id).filter(Boolean));
  const shownKept = kept.filter(({ message }) => !message.id || !held.has(message.id));
  /** The kept answers after `id` (null: those whose message is not in the thread). */
  const keptAfter = (id) =>
    shownKept
      .filter(({ afterId }) => (id === null ? !afterId || !held.has(afterId) : afterId === id))
      .map(({ message }, index) => <Stopped key={`stopped-${message.id ?? index}-${id}`} message={message} />);
  return (
    // Not a live region (it would read every streamed token): busy while the agent writes;
    // the chat's status line announces the answer once it is whole.
    <ol className="messages" aria-busy={stream.isLoading} data-testid="messages">
      {stream.messages.map((message, index) => {
        const after = message.id ? keptAfter(message.id) : [];
        if (message.type === "tool") return after;
        const text = textOf(message);
        const key = message.id || index;
        return [
          text || message.type !== "ai" ? (
            <li key={key} className={`message ${message.type}`} data-type={message.type}>
              {message.type === "ai" ? <Markdown text={text} /> : text}
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
          ...after,
        ];
      })}
      {keptAfter(null)}
    </ol>
  );
}
