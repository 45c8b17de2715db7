// A thread's messages in a line each: who sent it and what it says (or the tools it calls).
import { gistOf } from "./summary.js";

const WHO = { human: "You", ai: "Agent", tool: "Tool", system: "System" };

export function ThreadMessages({ messages, testId }) {
  if (!messages.length) return <p className="empty">No messages.</p>;
  return (
    <ol className="thread-messages" data-testid={testId}>
      {messages.map((message, index) => (
        <li key={message.id || index} data-type={message.type}>
          <span className="who">{message.type === "tool" && message.name ? `Tool ${message.name}` : WHO[message.type] ?? message.type}</span>{" "}
          <span className="what">{gistOf(message)}</span>
        </li>
      ))}
    </ol>
  );
}
