// A `usage` object (a run's, a day's…) in words: total tokens, in and out, model calls, cost.
import { cost, inOut, tokens } from "./numbers.js";

/** The facts of `usage`; `unpriced` lists the models with no known price. */
export function UsageFacts({ usage, unpriced = usage?.unpriced_models, testId, children }) {
  if (!usage) return <p className="empty">No model was called.</p>;
  return (
    <dl className="facts usage-facts" data-testid={testId} data-total-tokens={usage.total_tokens}>
      <dt>Tokens</dt>
      <dd>
        <strong>{tokens(usage.total_tokens)}</strong> ({inOut(usage)})
      </dd>
      <dt>Model calls</dt>
      <dd>{tokens(usage.model_calls)}</dd>
      <dt>Cost</dt>
      <dd data-testid={testId && `${testId}-cost`}>
        {cost(usage.cost_usd)}
        {unpriced?.length ? <span className="muted"> (no known price for {unpriced.join(", ")})</span> : null}
      </dd>
      {children}
    </dl>
  );
}
