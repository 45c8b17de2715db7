// How a thread reads in the console: its title, its messages in a line each, and what one
// checkpoint changed since the one before it.
import { textOf } from "../chat/text.js";

/** A message's one-line gist: its text, else the tools it calls. */
export function gistOf(message) {
  const text = textOf(message).trim();
  if (text) return text;
  const calls = message.tool_calls || [];
  if (calls.length) return calls.map((call) => `${call.name}(${JSON.stringify(call.args ?? {})})`).join(", ");
  return "";
}

/** A thread's title: the first human message's text (`extracted.title`), cut to a line. */
export function titleOf(thread) {
  const first = thread.extracted?.title;
  const text = first == null ? "" : textOf({ content: first }).trim();
  if (!text) return "(no message yet)";
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** What `values` holds that `before` (the previous checkpoint's, or null) did not: the
 * messages added (by id) and the names of the other keys that changed ("messages" too when
 * a message kept its id but not its content: an edit). */
export function changesOf(values, before) {
  const now = values || {};
  const then = before || {};
  const seen = new Map((then.messages || []).map((message) => [message.id, message]));
  const added = (now.messages || []).filter((message) => !message.id || !seen.has(message.id));
  const edited = (now.messages || []).some((message) => message.id && seen.has(message.id) && !same(seen.get(message.id), message));
  const keys = new Set([...Object.keys(now), ...Object.keys(then)]);
  keys.delete("messages");
  const changed = [...keys].filter((key) => !same(now[key], then[key]));
  if (edited) changed.push("messages");
  return { added, changed: changed.sort() };
}
