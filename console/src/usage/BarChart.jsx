// A hand-drawn SVG bar chart: one bar a row (a day, a user, a model…), stacked by segment
// (input, cached and output tokens, or cost), its value written at its end. The chart is an
// image labelled by what it shows; the same numbers are a table under it.
import { useId } from "react";
import { cost, tokens } from "./numbers.js";

const ROW = 26; // px a bar's row
const LABEL = 26; // % of the width: the labels
const BARS = 58; // % of the width: the longest bar

/** The segments of a row for `metric` ("tokens" or "cost"). */
export function segmentsOf(row, metric) {
  if (metric === "cost") return [{ name: "cost", value: row.cost_usd ?? 0 }];
  const cached = row.cached_tokens ?? 0;
  return [
    { name: "input", value: (row.input_tokens ?? 0) - cached },
    { name: "cached", value: cached },
    { name: "output", value: row.output_tokens ?? 0 },
  ];
}

export const valueOf = (row, metric) =>
  metric === "cost" ? cost(row.cost_usd) : `${tokens(row.total_tokens)} tokens`;

const short = (text) => (text.length > 26 ? `${text.slice(0, 25)}…` : text);

const amountOf = (row, metric) => (metric === "cost" ? row.cost_usd ?? 0 : row.total_tokens ?? 0);

const PLOT = 120; // px: the tallest column
const TOP = 18; // px above it: the largest value

/** The bars of `rows` standing as columns on a time axis (days), labelled every few. */
function Columns({ rows, metric, largest }) {
  const step = 100 / rows.length;
  const every = Math.ceil(rows.length / 10);
  return (
    <>
      <text x="0" y="12" className="value">
        {metric === "cost" ? cost(largest) : `${tokens(largest)} tokens`}
      </text>
      <line x1="0" x2="100%" y1={TOP + PLOT} y2={TOP + PLOT} className="baseline" />
      {rows.map((row, index) => {
        let y = TOP + PLOT;
        return (
          <g key={row.key ?? "none"} data-key={row.key ?? ""} data-value={amountOf(row, metric)}>
            <title>{`${row.label}: ${valueOf(row, metric)}`}</title>
            {segmentsOf(row, metric).map((segment) => {
              const height = largest > 0 ? (segment.value / largest) * PLOT : 0;
              y -= height;
              return (
                <rect
                  key={segment.name}
                  x={`${index * step + step * 0.15}%`}
                  y={y}
                  width={`${step * 0.7}%`}
                  height={height}
                  className={`segment ${segment.name}`}
                />
              );
            })}
            {(rows.length - 1 - index) % every === 0 ? (
              <text x={`${(index + 0.5) * step}%`} y={TOP + PLOT + 16} textAnchor="middle" className="label">
                {row.label.slice(5)}
              </text>
            ) : null}
          </g>
        );
      })}
    </>
  );
}

/** `rows`: [{key, label, …usage keys}]; `title`: what the chart is of, e.g. "Tokens per day";
 * `columns`: drawn as columns on a time axis (days) rather than bars. */
export function BarChart({ title, rows, metric, testId, columns = false }) {
  const id = useId();
  const largest = Math.max(...rows.map((row) => amountOf(row, metric)), 0);
  const scale = largest > 0 ? BARS / largest : 0;
  const legend = metric === "cost" ? [] : ["input", "cached", "output"];
  return (
    <figure className="chart" data-testid={testId}>
      {legend.length ? (
        <p className="legend" aria-hidden="true">
          {legend.map((name) => (
            <span key={name}>
              <svg width="12" height="12">
                <rect width="12" height="12" className={`segment ${name}`} />
              </svg>{" "}
              {name}
            </span>
          ))}
        </p>
      ) : null}
      <svg
        role="img"
        aria-labelledby={`${id}-title`}
        width="100%"
        height={columns ? TOP + PLOT + 24 : Math.max(rows.length, 1) * ROW}
        className="bars"
      >
        <title id={`${id}-title`}>
          {title}: {rows.map((row) => `${row.label} ${valueOf(row, metric)}`).join("; ") || "nothing yet"}
        </title>
        {columns ? <Columns rows={rows} metric={metric} largest={largest} /> : null}
        {columns ? null : rows.map((row, index) => {
          const y = index * ROW;
          let x = LABEL;
          return (
            <g key={row.key ?? "none"} data-key={row.key ?? ""} data-value={amountOf(row, metric)}>
              <text x="0" y={y + ROW / 2} dy="0.35em" className="label">
                {short(row.label)}
              </text>
              {segmentsOf(row, metric).map((segment) => {
                const width = segment.value * scale;
                const rect = (
                  <rect
                    key={segment.name}
                    x={`${x}%`}
                    y={y + 4}
                    width={`${width}%`}
                    height={ROW - 8}
                    className={`segment ${segment.name}`}
                  />
                );
                x += width;
                return rect;
              })}
              <text x={`${x + 1}%`} y={y + ROW / 2} dy="0.35em" className="value">
                {valueOf(row, metric)}
              </text>
            </g>
          );
        })}
      </svg>
      <details>
        <summary>{title} as a table</summary>
        <table className="usage-table">
          <caption className="visually-hidden">{title}</caption>
          <thead>
            <tr>
              <th scope="col"> </th>
              <th scope="col" className="number">Tokens</th>
              <th scope="col" className="number">Input</th>
              <th scope="col" className="number">Cached</th>
              <th scope="col" className="number">Output</th>
              <th scope="col" className="number">Runs</th>
              <th scope="col" className="number">Cost</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.key ?? "none"} data-key={row.key ?? ""}>
                <th scope="row">{row.label}</th>
                <td className="number">{tokens(row.total_tokens)}</td>
                <td className="number">{tokens(row.input_tokens)}</td>
                <td className="number">{tokens(row.cached_tokens)}</td>
                <td className="number">{tokens(row.output_tokens)}</td>
                <td className="number">{tokens(row.runs)}</td>
                <td className="number">{cost(row.cost_usd)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
