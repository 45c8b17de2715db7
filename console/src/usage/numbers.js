// How the console writes token counts, costs and durations, and sums a run's `usage`.

const INTEGER = new Intl.NumberFormat("en-US");

/** 12345 as "12,345" (0 for a missing count). */
export function tokens(count) {
  return INTEGER.format(count || 0);
}

/** A cost in US dollars: "$0.0123", "$12.35"; null (no known price) as "no price". */
export function cost(usd) {
  if (usd == null) return "no price";
  const digits = usd !== 0 && Math.abs(usd) < 1 ? 4 : 2;
  return `$${usd.toFixed(digits)}`;
}

/** A duration: "850 ms", "3.2 s", "2 min 5 s"; null (still running) as "running". */
export function duration(ms) {
  if (ms == null) return "running";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** "1,200 in (300 cached) · 80 out" for an object with the usage keys. */
export function inOut(usage) {
  const cached = usage.cached_tokens ? ` (${tokens(usage.cached_tokens)} cached)` : "";
  return `${tokens(usage.input_tokens)} in${cached} · ${tokens(usage.output_tokens)} out`;
}
