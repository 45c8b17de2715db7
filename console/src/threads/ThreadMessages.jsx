// A thread's messages in a line each: who sent it and what it says (or the tools it calls).
import { isRejection } from "../chat/rejection.js";
import { gistOf } from "./summary.js";

const WHO = { human: "You", ai: "Agent", tool: "Tool", system: "System" };

function whoOf(message) {
  if (message.type !== "tool" || !message.name) return WHO[message.type] ?? message.type;
  return isRejection(message) ? `Tool ${message.name} rejected` : `Tool ${message.name}`;
}

/** `actionsOf(message)`: buttons to show after a message (e.g. to edit it), or null. */
export function ThreadMessages({ messages, testId, actionsOf = null }) {
  if (!messages.length) return <p className="empty">No messages.</p>;
  return (
    <ol className="thread-messages" data-testid={testId}>
      {messages.map((message, index) => (
        <li key={message.id || index} data-type={message.type} data-rejected={isRejection(message) || undefined}>
          <span className="who">{whoOf(message)}</span> <span className="what">{gistOf(message)}</span>
          {actionsOf ? actionsOf(message) : null}
        </li>
      ))}
    </ol>
  );
}
