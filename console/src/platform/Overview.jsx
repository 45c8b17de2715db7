// Every agent of the platform side by side: its active revision, runs running and queued,
// runs that failed, what its runs spent (GET /platform/usage), a link to its console; and
// the deploys across agents, newest first. Polled every few seconds.
import { Alert } from "../Alert.jsx";
import { Table } from "../operator/Table.jsx";
import { usePlatform } from "../operator/usePlatform.js";
import { Time } from "../time.jsx";
import { cost, tokens } from "../usage/numbers.js";

const EVERY = 5000;
const AGENT_COLUMNS = ["Agent", "Revision", "Running", "Queued", "Errors", "Tokens", "Cost", ""];
const DEPLOY_COLUMNS = ["Deployed at", "Agent", "Revision", "Id", "Model", "State"];

export function Overview() {
  const overview = usePlatform("/platform/overview", { every: EVERY });
  const usage = usePlatform("/platform/usage?group_by=agent", { every: EVERY });
  const spent = Object.fromEntries((usage.data?.rows ?? []).map((row) => [row.key, row]));
  const agents = overview.data?.agents ?? [];
  const deploys = overview.data?.deploys ?? [];
  const unservable = Object.entries(overview.data?.unservable ?? {});
  return (
    <div className="operator">
      <h1 tabIndex={-1}>Platform overview</h1>
      <Alert error={overview.error} />
      <section className="panel" aria-labelledby="overview-agents">
        <h2 id="overview-agents">Agents</h2>
        {overview.data && !agents.length ? (
          <p data-testid="no-agents">
            No agent yet: deploy one with <code>agentctl deploy</code>.
          </p>
        ) : null}
        {agents.length ? (
          <div className="scroll">
            <Table testId="agents" caption="The platform's agents" columns={AGENT_COLUMNS}>
              {agents.map((agent) => {
                const used = spent[agent.name];
                const failed = agent.runs.error + agent.runs.timeout;
                return (
                  <tr key={agent.name} data-agent={agent.name}>
                    <th scope="row">{agent.name}</th>
                    <td>{agent.active_revision ? agent.active_revision.number : "none"}</td>
                    <td className="number">{agent.runs.running}</td>
                    <td className="number">{agent.runs.pending}</td>
                    <td className={`number${failed ? " error" : ""}`}>{failed}</td>
                    <td className="number">{used ? tokens(used.total_tokens) : "–"}</td>
                    <td className="number">{used ? cost(used.cost_usd) : "–"}</td>
                    <td>
                      <a href={agent.console_url}>
                        Open<span className="visually-hidden"> {agent.name}'s console</span>
                      </a>
                    </td>
                  </tr>
                );
              })}
            </Table>
          </div>
        ) : null}
        <Alert error={usage.error} />
        {unservable.map(([name, reason]) => (
          <Alert key={name}>
            This replica cannot serve {name}: {reason}
          </Alert>
        ))}
      </section>
      <section className="panel" aria-labelledby="overview-deploys">
        <h2 id="overview-deploys">Deploys</h2>
        {overview.data && !deploys.length ? <p>Nothing deployed yet.</p> : null}
        {deploys.length ? (
          <div className="scroll">
            <Table testId="deploys" caption="Deploys across agents, newest first" columns={DEPLOY_COLUMNS}>
              {deploys.map((deploy) => (
                <tr key={`${deploy.agent}-${deploy.number}`}>
                  <td>
                    <Time value={deploy.created_at} />
                  </td>
                  <th scope="row">{deploy.agent}</th>
                  <td>{deploy.number}</td>
                  <td>
                    <code title={deploy.revision_id}>{deploy.revision_id.slice(0, 12)}</code>
                  </td>
                  <td>{deploy.model}</td>
                  <td>{deploy.active ? <strong className="active-marker">Active</strong> : "–"}</td>
                </tr>
              ))}
            </Table>
          </div>
        ) : null}
      </section>
    </div>
  );
}
