// The Connections view (GET /connections): a signed-in user's own accounts on the agent's
// user-owned MCP servers, to connect or revoke; for the operator, how many users connected
// each server.
import { Alert } from "../Alert.jsx";
import { request } from "../api.js";
import { ServerUsers } from "../connections/ServerUsers.jsx";
import { YourConnections } from "../connections/YourConnections.jsx";
import { useConsole } from "../context.js";
import { useRequest } from "../useRequest.js";

export function Connections() {
  const { credentials } = useConsole();
  const { data, error, reload } = useRequest(() => request(credentials, "/connections"), [credentials]);
  return (
    <section className="connections" aria-labelledby="connections-title">
      <h1 id="connections-title" tabIndex={-1}>
        Connections
      </h1>
      <Alert error={error} />
      {Array.isArray(data?.connections) ? (
        <YourConnections connections={data.connections} reload={reload} />
      ) : Array.isArray(data?.servers) ? (
        <ServerUsers servers={data.servers} />
      ) : null}
      {data === undefined && !error ? <p className="status">Loading…</p> : null}
    </section>
  );
}
