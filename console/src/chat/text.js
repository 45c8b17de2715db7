// How the chat shows what the agent's state holds: message text, JSON, file contents.

/** The text of a message: its string content, or its text parts joined. */
export function textOf(message) {
  if (typeof message.content === "string") return message.content;
  return (message.content || [])
    .map((part) => (typeof part === "string" ? part : part.text || ""))
    .join("");
}

/** `value` as indented JSON, for arguments and values a person reads. */
export function pretty(value) {
  return JSON.stringify(value ?? null, null, 2);
}

/** A file of the deep agent's state (`{content: [...lines] | string}`) as text. */
export function fileText(file) {
  const content = file?.content;
  if (Array.isArray(content)) return content.join("\n");
  return typeof content === "string" ? content : pretty(content);
}
