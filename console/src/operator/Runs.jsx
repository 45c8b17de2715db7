// Every run in flight or queued on the server, whoever's thread it is on, refreshed every
// second; each can be cancelled.
import { useState } from "react";
import { useConsole } from "../context.js";
import { href } from "../route.js";
import { Alert } from "../Alert.jsx";
import { Time } from "../time.jsx";
import { Table } from "./Table.jsx";
import { usePlatform } from "./usePlatform.js";

const COLUMNS = ["Thread", "Run", "Assistant", "Status", "Created", ""];

export function Runs() {
  const { client } = useConsole();
  const runs = usePlatform("/platform/runs", { every: 1000 });
  const [failure, setFailure] = useState(null);
  const cancel = async (run) => {
    setFailure(null);
    try {
      await client.runs.cancel(run.thread_id, run.run_id);
      await runs.reload();
    } catch (error) {
      setFailure(error);
    }
  };
  const error = failure ?? runs.error;
  const rows = runs.data ?? [];
  return (
    <>
      <Alert error={error} />
      {runs.data && !rows.length ? (
        <p data-testid="no-runs">No run is in flight or queued.</p>
      ) : null}
      {rows.length ? (
        <Table testId="runs" caption="Runs in flight and queued" columns={COLUMNS}>
          {rows.map((run) => (
            <tr key={run.run_id} data-run={run.run_id}>
              <td>
                <a href={href("threads", run.thread_id)}>
                  <code>{run.thread_id}</code>
                </a>
              </td>
              <td>
                <code>{run.run_id}</code>
              </td>
              <td>
                <code title={run.assistant_id}>{run.assistant_id.slice(0, 8)}</code>
              </td>
              <td>
                <span className={`run-status ${run.status}`}>{run.status}</span>
              </td>
              <td>
                <Time value={run.created_at} />
              </td>
              <td>
                <button
                  type="button"
                  className="danger"
                  onClick={() => cancel(run)}
                  aria-label={`Cancel run ${run.run_id}`}
                >
                  Cancel
                </button>
              </td>
            </tr>
          ))}
        </Table>
      ) : null}
    </>
  );
}
