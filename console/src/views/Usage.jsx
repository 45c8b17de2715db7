// Usage: for the operator (the deployment key, or anyone on a server without [auth]) the
// tokens and cost per day, per user and per model (GET /usage), and per agent when the
// console is one agent's on a platform (GET /platform/usage); for a signed-in user their
// own: today's, what their budgets leave (GET /usage/me), and per day.
import { useState } from "react";
import { Alert } from "../Alert.jsx";
import { API_URL, request } from "../api.js";
import { useConsole } from "../context.js";
import { Time } from "../time.jsx";
import { useRequest } from "../useRequest.js";
import { BarChart } from "../usage/BarChart.jsx";
import { cost, tokens } from "../usage/numbers.js";
import { UsageFacts } from "../usage/Usage.jsx";

const DAY = 86_400_000;
const isoDay = (time) => new Date(time).toISOString().slice(0, 10);

/** The platform's own base URL when this console is an agent's on it (`…/agents/<name>/ui/`). */
export function platformBase(apiUrl = API_URL) {
  const match = /^(.*)\/agents\/[^/]+$/.exec(apiUrl);
  return match ? match[1] : apiUrl;
}

/** Rows of `answer` labelled, and every day between since and until listed (0 if none). */
function rowsOf(answer, groupBy) {
  const rows = answer.rows.map((row) => ({ ...row, label: row.key ?? "(no user)" }));
  if (groupBy !== "day") return rows;
  const byDay = new Map(rows.map((row) => [row.key, row]));
  const first = Date.parse(answer.since);
  const last = Date.parse(answer.until);
  if (!(last >= first) || last - first > 92 * DAY) return rows;
  const days = [];
  for (let time = first; time <= last; time += DAY) {
    const day = isoDay(time);
    days.push(byDay.get(day) ?? { key: day, label: day, total_tokens: 0, cost_usd: 0, runs: 0 });
  }
  return days;
}

/** GET `path` (grouped by `groupBy`, over `range`) at `base` (default: this agent's). */
function useUsage(path, groupBy, range, base = API_URL) {
  const { credentials } = useConsole();
  const query = `${path}?group_by=${groupBy}&since=${range.since}&until=${range.until}`;
  return useRequest(() => request(credentials, query, { base }), [credentials, base, query]);
}

function Chart({ answer, groupBy, title, metric, testId, hideWhenMissing }) {
  const status = answer.error?.status;
  if (hideWhenMissing && (status === 404 || status === 405)) return null;
  const heading = `${metric === "cost" ? "Cost" : "Tokens"} per ${title}`;
  let shown = answer.error ? null : <p className="status">Loading…</p>;
  if (answer.data?.rows.length) {
    const rows = rowsOf(answer.data, groupBy);
    shown = <BarChart title={heading} rows={rows} metric={metric} testId={testId} columns={groupBy === "day"} />;
  } else if (answer.data) {
    shown = <p className="empty">No usage in these days.</p>;
  }
  return (
    <section className="panel" aria-labelledby={`${testId}-title`}>
      <h2 id={`${testId}-title`}>{heading}</h2>
      <Alert error={answer.error} />
      {shown}
    </section>
  );
}

function Range({ range, setRange, metric, setMetric }) {
  return (
    <form className="usage-controls" aria-label="Usage shown" onSubmit={(event) => event.preventDefault()}>
      <label>
        From
        <input
          type="date"
          value={range.since}
          max={range.until}
          onChange={(event) => event.target.value && setRange({ ...range, since: event.target.value })}
        />
      </label>
      <label>
        To
        <input
          type="date"
          value={range.until}
          min={range.since}
          onChange={(event) => event.target.value && setRange({ ...range, until: event.target.value })}
        />
      </label>
      <fieldset>
        <legend className="visually-hidden">Show</legend>
        {["tokens", "cost"].map((name) => (
          <label key={name}>
            <input
              type="radio"
              name="metric"
              value={name}
              checked={metric === name}
              onChange={() => setMetric(name)}
            />{" "}
            {name === "tokens" ? "Tokens" : "Cost"}
          </label>
        ))}
      </fieldset>
    </form>
  );
}

function Total({ answer }) {
  if (!answer.data) return null;
  const { total, unpriced_models: unpriced } = answer.data;
  const spent = total?.total_tokens || total?.runs ? total : null;
  return <UsageFacts usage={spent} unpriced={unpriced} testId="usage-total" />;
}

function Budgets({ budgets }) {
  if (!budgets.length) return <p className="empty">No budget limits your use of this agent.</p>;
  const amount = (budget, value) => (budget.unit === "usd" ? cost(value) : `${tokens(value)} ${budget.unit}`);
  return (
    <ul className="budgets" data-testid="budgets">
      {budgets.map((budget) => (
        <li key={`${budget.name} ${budget.set_by}`} data-budget={budget.name}>
          <span className="budget-name">
            {budget.name.replaceAll("_", " ")}
            {budget.scope === "agent" ? " (all users)" : ""}
          </span>{" "}
          <meter
            min={0}
            max={budget.limit}
            value={Math.min(budget.used, budget.limit)}
            aria-label={`${budget.name.replaceAll("_", " ")} used`}
          />{" "}
          <span data-testid="budget-remaining">
            {amount(budget, budget.remaining)} left of {amount(budget, budget.limit)} this {budget.window}
          </span>
          {budget.resets_at ? (
            <span className="muted">
              {" "}
              (resets <Time value={budget.resets_at} />)
            </span>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

function Mine({ range, metric }) {
  const { credentials } = useConsole();
  const me = useRequest(() => request(credentials, "/usage/me"), [credentials]);
  const days = useUsage("/usage", "day", range);
  return (
    <>
      <section className="panel" aria-labelledby="usage-today">
        <h2 id="usage-today">Today</h2>
        <Alert error={me.error} />
        {me.data ? (
          <>
            <UsageFacts usage={me.data.today?.model_calls ? me.data.today : null} testId="usage-today" />
            <h3>Your budgets</h3>
            <Budgets budgets={me.data.budgets ?? []} />
          </>
        ) : null}
      </section>
      <Chart answer={days} groupBy="day" title="day" metric={metric} testId="chart-day" />
    </>
  );
}

function lastDays(count) {
  const until = Date.now();
  return { since: isoDay(until - (count - 1) * DAY), until: isoDay(until) };
}

function Everyone({ range, metric }) {
  const days = useUsage("/usage", "day", range);
  const users = useUsage("/usage", "user", range);
  const models = useUsage("/usage", "model", range);
  const agents = useUsage("/platform/usage", "agent", range, platformBase());
  return (
    <>
      <section className="panel" aria-labelledby="usage-total-title">
        <h2 id="usage-total-title">In these days</h2>
        <Total answer={days} />
      </section>
      <Chart answer={days} groupBy="day" title="day" metric={metric} testId="chart-day" />
      <Chart answer={users} groupBy="user" title="user" metric={metric} testId="chart-user" />
      <Chart answer={models} groupBy="model" title="model" metric={metric} testId="chart-model" />
      <Chart
        answer={agents}
        groupBy="agent"
        title="agent on this platform"
        metric={metric}
        testId="chart-agent"
        hideWhenMissing
      />
    </>
  );
}

export function Usage() {
  const { caller, info } = useConsole();
  const [range, setRange] = useState(() => lastDays(14));
  const [metric, setMetric] = useState("tokens");
  const user = caller === "user";
  return (
    <div className="operator usage">
      <h1 tabIndex={-1}>{user ? "Your usage" : "Usage"}</h1>
      <p className="muted">
        {user
          ? `What your runs of ${info.graph ?? "this agent"} used, and what your budgets leave.`
          : "Tokens the runs used and what they cost, from the providers' own counts and the known prices."}
      </p>
      <Range range={range} setRange={setRange} metric={metric} setMetric={setMetric} />
      {user ? <Mine range={range} metric={metric} /> : <Everyone range={range} metric={metric} />}
    </div>
  );
}
