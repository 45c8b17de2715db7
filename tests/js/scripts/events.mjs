// What the thread-stream scripts share: a protocol event in brief, and a message stream's
// text and error collected as the app sees them.

/** An event's method, namespace, kind (`data.event`), seq and id: what the tests compare. */
export function summary(event) {
  const data = event.params?.data ?? {};
  return {
    method: event.method,
    namespace: event.params?.namespace,
    event: typeof data.event === "string" ? data.event : undefined,
    seq: event.seq,
    event_id: event.event_id,
  };
}

/** Each message of a `thread.messages` projection: its whole text, and its error if it was
 * cut short. */
export async function collectMessages(projection) {
  const out = [];
  for await (const message of projection) {
    out.push({ text: await message.text, error: message.assembled?.error ?? null });
  }
  return out;
}
