// The deployed revisions, newest first, with their deploy times and the secrets they carry
// (names only); activating one (a rollback or a roll forward) asks for a confirmation first.
import { useState } from "react";
import { Alert } from "../Alert.jsx";
import { describeError, request } from "../api.js";
import { Confirm } from "../Confirm.jsx";
import { useConsole } from "../context.js";
import { Time } from "../time.jsx";
import { Table } from "./Table.jsx";
import { usePlatform } from "./usePlatform.js";

const COLUMNS = ["Revision", "Id", "Agent", "Model", "Deployed at", "Secrets", "State"];

export function Revisions() {
  const { info, credentials, refreshInfo } = useConsole();
  const revisions = usePlatform("/platform/revisions", { skip: !info.deploys });
  const [notice, setNotice] = useState(null);
  if (!info.deploys) {
    return (
      <p data-testid="no-deploys">
        This server takes no deploys (it runs <code>agentctl dev</code> on your project's files):
        revisions and rollbacks are <code>agentctl serve</code>'s.
      </p>
    );
  }
  // A failure to activate throws (the confirmation shows it); once activated, a failure to
  // read the server's /info again is only that.
  const activate = async (number) => {
    setNotice(null);
    await request(credentials, `/platform/revisions/${number}/activate`, { method: "POST" });
    const [, refreshed] = await Promise.allSettled([revisions.reload(), refreshInfo()]);
    if (refreshed.status === "rejected") {
      setNotice(`Revision ${number} is active; reading /info again failed: ${describeError(refreshed.reason)}`);
    }
  };
  const rows = revisions.data ?? [];
  const active = rows.find((row) => row.active)?.number;
  const control = (row) => {
    if (row.active) return <strong className="active-marker">Active</strong>;
    return (
      <Confirm
        label={active !== undefined && row.number < active ? "Roll back to this" : "Activate"}
        className="secondary"
        group={`Activate revision ${row.number}?`}
        question={`Serve revision ${row.number} to new runs?`}
        yes="Confirm"
        no="Cancel"
        onConfirm={() => activate(row.number)}
      />
    );
  };
  return (
    <>
      <Alert error={revisions.error} />
      {notice ? (
        <p role="status" className="hint">
          {notice}
        </p>
      ) : null}
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
              <td>
                <Time value={row.created_at} />
              </td>
              <td>{row.secrets.length ? row.secrets.join(", ") : "none"}</td>
              <td>{control(row)}</td>
            </tr>
          ))}
        </Table>
      ) : null}
    </>
  );
}
