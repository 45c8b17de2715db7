// What the operator sees of connections: per user-owned server, how many users connected
// their account (never who, never a token).
import { Table } from "../operator/Table.jsx";

const COLUMNS = ["Server", "What it is for", "Users connected"];

export function ServerUsers({ servers }) {
  if (!servers.length) {
    return (
      <p className="empty" data-testid="no-connections">
        This agent has no servers that act as its users (no server in its mcp.json has{" "}
        <code>oauth</code>).
      </p>
    );
  }
  return (
    <>
      <p className="hint">
        Each user connects their own account on these servers. The counts are all an operator
        sees: users' tokens are never shown.
      </p>
      <Table testId="connection-counts" caption="Users connected per server" columns={COLUMNS}>
        {servers.map((row) => (
          <tr key={row.server} data-server={row.server}>
            <th scope="row">
              <code>{row.server}</code>
            </th>
            <td>{row.description ?? ""}</td>
            <td data-testid="users">{row.users}</td>
          </tr>
        ))}
      </Table>
    </>
  );
}
