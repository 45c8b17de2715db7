// The one way the console shows a time: the visitor's local time, with its zone.

const FORMAT = { dateStyle: "medium", timeStyle: "long" };

/** An ISO time as `Nov 25, 2026, 7:13:24 AM GMT+1` (in the visitor's locale and zone). */
export function formatTime(value) {
  if (!value) return "";
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString(undefined, FORMAT);
}

/** A `<time>` element showing `value` with `formatTime`. */
export function Time({ value }) {
  return value ? <time dateTime={value}>{formatTime(value)}</time> : null;
}
