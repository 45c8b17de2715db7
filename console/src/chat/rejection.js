// A tool call a person rejected at an approval gate: its ToolMessage is an error the gate
// wrote (langchain marks it `lc_source: "hitl_interrupt_decision"` with the decision), not
// a tool that failed.

const REJECTED_TEXT = /^User rejected the tool call for `/;

/** True when `message` (a ToolMessage) answers a call a person rejected. */
export function isRejection(message) {
  if (!message || message.type !== "tool") return false;
  const extra = message.additional_kwargs ?? {};
  if (extra.lc_source === "hitl_interrupt_decision") return extra.lc_data?.decision === "reject";
  const text = typeof message.content === "string" ? message.content : "";
  return message.status === "error" && REJECTED_TEXT.test(text);
}
