// A thread's runs, newest first: status, when, tokens and cost; each opens its trace.
import { Fragment, useState } from "react";
import { Alert } from "../Alert.jsx";
import { useConsole } from "../context.js";
import { Time } from "../time.jsx";
import { useRequest } from "../useRequest.js";
import { cost, tokens } from "../usage/numbers.js";
import { RunTrace } from "./Waterfall.jsx";

export const RUNS_LIMIT = 20;

export function RunList({ threadId }) {
  const { client } = useConsole();
  const runs = useRequest(() => client.runs.list(threadId, { limit: RUNS_LIMIT }), [client, threadId]);
  const [open, setOpen] = useState(null);
  if (runs.error) return <Alert error={runs.error} />;
  if (!runs.data) return <p className="status">Loading the runs…</p>;
  if (!runs.data.length) return <p className="empty">No runs yet.</p>;
  return (
    <table data-testid="runs">
      <caption className="visually-hidden">The thread's runs</caption>
      <thead>
        <tr>
          <th scope="col">Run</th>
          <th scope="col">Status</th>
          <th scope="col">Created</th>
          <th scope="col" className="number">
            Tokens
          </th>
          <th scope="col" className="number">
            Cost
          </th>
          <th scope="col">
            <span className="visually-hidden">Trace</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {runs.data.map((run) => {
          const shown = open === run.run_id;
          return (
            <Fragment key={run.run_id}>
              <tr data-run={run.run_id}>
                <th scope="row">
                  <code>{run.run_id}</code>
                </th>
                <td>
                  <span className={`badge ${run.status}`}>{run.status}</span>
                </td>
                <td>
                  <Time value={run.created_at} />
                </td>
                <td className="number">{run.usage ? tokens(run.usage.total_tokens) : "—"}</td>
                <td className="number">{run.usage ? cost(run.usage.cost_usd) : "—"}</td>
                <td>
                  <button
                    type="button"
                    className="secondary"
                    aria-expanded={shown}
                    aria-controls={`trace-${run.run_id}`}
                    onClick={() => setOpen(shown ? null : run.run_id)}
                  >
                    {shown ? "Hide the trace" : "Trace"}
                    <span className="visually-hidden"> of run {run.run_id}</span>
                  </button>
                </td>
              </tr>
              {shown ? (
                <tr id={`trace-${run.run_id}`} className="trace-row">
                  <td colSpan={6}>
                    <RunTrace run={run} />
                  </td>
                </tr>
              ) : null}
            </Fragment>
          );
        })}
      </tbody>
    </table>
  );
}
