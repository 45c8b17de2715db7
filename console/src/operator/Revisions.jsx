// The deployed revisions, newest first, with their deploy times and the secrets they carry
// (names only); activating one (a rollback or a roll forward) asks for a confirmation first.
import { useState } from "react";
import { request } from "../api.js";
import { useConsole } from "../context.js";
import { Failure, Table } from "./Table.jsx";
import { usePlatform, when } from "./usePlatform.js";

const COLUMNS = ["Revision", "Id", "Agent", "Model", "Deployed at", "Secrets", "State"];

export function Revisions() {
  const { info, credentials, refreshInfo } = useConsole();
  const revisions = usePlatform("/platform/revisions", { skip: !info.deploys });
  const [confirming, setConfirming] = useState(null);
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState(null);
  if (!info.deploys) {
    return (
      <p data-testid="no-deploys">
        This server takes no deploys (it runs <code>agentctl dev</code> on your project's files):
        revisions and rollbacks are <code>agentctl serve</code>'s.
      </p>
    );
  }
  const activate = async (number) => {
    setBusy(true);
    setFailure(null);
    try {
      await request(credentials, `/platform/revisions/${number}/activate`, { method: "POST" });
      setConfirming(null);
      await Promise.all([revisions.reload(), refreshInfo()]);
    } catch (error) {
      setFailure(error);
    } finally {
      setBusy(false);
    }
  };
  const rows = revisions.data ?? [];
  const active = rows.find((row) => row.active)?.number;
  const control = (row) => {
    if (row.active) return <strong className="active-marker">Active</strong>;
    if (confirming !== row.number) {
      return (
        <button type="button" className="secondary" onClick={() => setConfirming(row.number)}>
          {active !== undefined && row.number < active ? "Roll back to this" : "Activate"}
        </button>
      );
    }
    return (
      <span className="confirm" role="group" aria-label={`Activate revision ${row.number}?`}>
        Serve revision {row.number} to new runs?
        <button type="button" disabled={busy} onClick={() => activate(row.number)}>
          Confirm
        </button>
        <button type="button" className="secondary" onClick={() => setConfirming(null)}>
          Cancel
        </button>
      </span>
    );
  };
  return (
    <>
      <Failure error={failure ?? revisions.error} />
      {revisions.data && !rows.length ? (
        <p>
          Nothing deployed yet: run <code>agentctl deploy</code>.
        </p>
      ) : null}
      {rows.length ? (
        <Table testId="revisions" caption="Deployed revisions" columns={COLUMNS}>
          {rows.map((row) => (
            <tr key={row.number} data-number={row.number}>
              <th scope="row">{row.number}</th>
              <td>
                <code title={row.revision_id}>{row.revision_id.slice(0, 12)}</code>
              </td>
              <td>{row.agent}</td>
              <td>{row.model}</td>
              <td>{when(row.created_at)}</td>
              <td>{row.secrets.length ? row.secrets.join(", ") : "none"}</td>
              <td>{control(row)}</td>
            </tr>
          ))}
        </Table>
      ) : null}
    </>
  );
}
