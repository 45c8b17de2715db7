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

function fromBase64(text) {
  const bytes = Uint8Array.from(atob(text.replace(/\s/g, "")), (char) => char.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

/** A file as deepagents keeps it (`{content: [...lines] | string, encoding}`, in the agent's
 * state or the store) as text; `encoding: "base64"` is decoded. */
export function fileText(file) {
  const content = file?.content;
  const text = Array.isArray(content) ? content.join("\n") : content;
  if (typeof text !== "string") return pretty(content);
  if (file.encoding !== "base64") return text;
  try {
    return fromBase64(text);
  } catch {
    return text;
  }
}
