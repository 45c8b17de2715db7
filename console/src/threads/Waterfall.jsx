// A run's trace as a waterfall: each model call, tool, subagent and MCP call a bar on the
// run's time axis, nested under the step it ran in, with its duration and tokens; errors
// marked; the run's usage and cost on top. A table: the bars are drawn, the cells say it.
import { Alert } from "../Alert.jsx";
import { request } from "../api.js";
import { useConsole } from "../context.js";
import { useRequest } from "../useRequest.js";
import { duration, inOut, tokens } from "../usage/numbers.js";
import { UsageFacts } from "../usage/Usage.jsx";

const KINDS = { model: "model", tool: "tool", subagent: "subagent", mcp: "MCP" };

/** The steps in tree order (children after their parent, by start), each with its depth. */
export function treeOrder(steps) {
  const children = new Map();
  const ids = new Set(steps.map((step) => step.id));
  for (const step of steps) {
    const parent = ids.has(step.parent_id) ? step.parent_id : null;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(step);
  }
  const ordered = [];
  const visit = (parent, depth) => {
    const under = (children.get(parent) ?? []).sort((a, b) => a.started_ms - b.started_ms || a.id - b.id);
    for (const step of under) {
      ordered.push({ step, depth });
      visit(step.id, depth + 1);
    }
  };
  visit(null, 0);
  return ordered;
}

const percent = (part, whole) => `${Math.min(100, Math.max(0, (part / whole) * 100)).toFixed(2)}%`;

function StepRow({ step, depth, total }) {
  const end = step.duration_ms == null ? total : step.started_ms + step.duration_ms;
  const width = Math.max(end - step.started_ms, total / 400);
  return (
    <tr
      className={step.error ? "step failed" : "step"}
      data-kind={step.kind}
      data-depth={depth}
      data-tokens={step.total_tokens ?? undefined}
    >
      <th scope="row" style={{ paddingLeft: `${0.5 + depth * 1.25}rem` }}>
        <span className={`step-kind k-${step.kind}`}>{KINDS[step.kind] ?? step.kind}</span>{" "}
        {step.name}
        {step.model && step.model !== step.name ? <span className="muted"> {step.model}</span> : null}
        {step.error ? (
          <strong className="step-error" data-testid="step-error">
            {" "}
            ⚠ failed: {step.error}
          </strong>
        ) : null}
      </th>
      <td className="bar-cell">
        <div className="track" aria-hidden="true">
          <div
            className={`bar k-${step.kind}${step.error ? " failed" : ""}`}
            style={{ left: percent(step.started_ms, total), width: percent(width, total) }}
          />
        </div>
        <span className="visually-hidden">starts at {duration(step.started_ms)}</span>
      </td>
      <td className="number">{duration(step.duration_ms)}</td>
      <td className="number">
        {step.total_tokens == null ? (
          <span className="muted">—</span>
        ) : (
          <>
            {tokens(step.total_tokens)}
            <div className="muted small">{inOut(step)}</div>
          </>
        )}
      </td>
    </tr>
  );
}

export function Waterfall({ trace, usage }) {
  const rows = treeOrder(trace.steps ?? []);
  const ends = rows.map(({ step }) => step.started_ms + (step.duration_ms ?? 0));
  const total = Math.max(trace.duration_ms ?? 0, ...ends, 1);
  return (
    <div className="waterfall" data-testid="waterfall">
      <UsageFacts usage={usage} testId="run-usage">
        <dt>Duration</dt>
        <dd>{duration(trace.duration_ms)}</dd>
        <dt>Steps</dt>
        <dd>
          {rows.length}
          {trace.truncated ? <span className="muted"> (only the first ones were recorded)</span> : null}
        </dd>
      </UsageFacts>
      {rows.length ? (
        <table className="waterfall-table">
          <caption className="visually-hidden">The run's steps on its time axis</caption>
          <thead>
            <tr>
              <th scope="col">Step</th>
              <th scope="col" className="bar-cell">
                <span className="visually-hidden">Time</span>
                <span className="axis" aria-hidden="true">
                  <span>0</span>
                  <span>{duration(total / 2)}</span>
                  <span>{duration(total)}</span>
                </span>
              </th>
              <th scope="col" className="number">
                Duration
              </th>
              <th scope="col" className="number">
                Tokens
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map(({ step, depth }) => (
              <StepRow key={step.id} step={step} depth={depth} total={total} />
            ))}
          </tbody>
        </table>
      ) : (
        <p className="empty">No step was recorded.</p>
      )}
    </div>
  );
}

/** The trace of run `run` fetched, then drawn. */
export function RunTrace({ run }) {
  const { credentials } = useConsole();
  const path = `/threads/${encodeURIComponent(run.thread_id)}/runs/${encodeURIComponent(run.run_id)}/trace`;
  const { data, error } = useRequest(() => request(credentials, path), [credentials, path]);
  if (error?.status === 404) return <p className="empty">No trace was recorded for this run.</p>;
  if (error) return <Alert error={error} />;
  if (!data) return <p className="status">Loading the trace…</p>;
  return <Waterfall trace={data} usage={run.usage} />;
}
