// The signed-in user's accounts on the agent's user-owned MCP servers: each connected (with
// its scopes and times) or not; Connect opens the provider's sign-in page in a new tab,
// Revoke (asked first) removes the connection.
import { useEffect, useState } from "react";
import { Alert } from "../Alert.jsx";
import { describeError, request } from "../api.js";
import { Confirm } from "../Confirm.jsx";
import { useConsole } from "../context.js";
import { Table } from "../operator/Table.jsx";
import { Time } from "../time.jsx";
import { openSignIn } from "./provider.js";

const COLUMNS = ["Server", "What it is for", "State", "Scopes", "Connected at", "Access token expires", ""];

function ConnectButton({ server, onOpened }) {
  const { credentials } = useConsole();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const connect = async () => {
    setBusy(true);
    setError(null);
    try {
      onOpened(await openSignIn(credentials, { server }));
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" disabled={busy} onClick={connect}>
        Connect<span className="visually-hidden"> {server}</span>
      </button>
      {error ? (
        <span role="alert" className="error">
          {describeError(error)}
        </span>
      ) : null}
    </>
  );
}

function Row({ connection, waiting, onOpened, onRevoke }) {
  const { server } = connection;
  return (
    <tr data-server={server}>
      <th scope="row">
        <code>{server}</code>
      </th>
      <td>{connection.description ?? ""}</td>
      <td data-testid="connection-state">
        {connection.connected ? (
          <strong className="active-marker">Connected</strong>
        ) : waiting ? (
          "Waiting for you to sign in…"
        ) : (
          "Not connected"
        )}
        {waiting?.blocked ? (
          <>
            {" "}
            <a href={waiting.url} target="_blank" rel="noopener noreferrer">
              Open the sign-in page
            </a>
          </>
        ) : null}
      </td>
      <td>{connection.scopes?.length ? connection.scopes.join(" ") : ""}</td>
      <td>
        <Time value={connection.connected_at} />
      </td>
      <td>
        <Time value={connection.expires_at} />
      </td>
      <td>
        {connection.connected ? (
          <Confirm
            label={
              <>
                Revoke<span className="visually-hidden"> {server}</span>
              </>
            }
            group={`Revoke ${server}?`}
            question={`Revoke your connection to ${server}? The agent can no longer act as you there.`}
            yes="Revoke"
            yesClass="danger"
            no="Cancel"
            onConfirm={() => onRevoke(server)}
          />
        ) : (
          <ConnectButton server={server} onOpened={(opened) => onOpened(server, opened)} />
        )}
      </td>
    </tr>
  );
}

/** `connections`: GET /connections's list; `reload()` asks again. While a sign-in is under
 * way in another tab, the list is asked again every `poll` ms and when this tab gets the
 * focus back, until that server shows connected. */
export function YourConnections({ connections, reload, poll = 2000 }) {
  const { credentials } = useConsole();
  const [waiting, setWaiting] = useState({}); // server -> {url, blocked}
  const [notice, setNotice] = useState(null);
  const pending = connections.some((c) => waiting[c.server] && !c.connected);

  useEffect(() => {
    // Once a server shows connected, it is no longer waited for.
    const done = connections.filter((c) => c.connected && waiting[c.server]);
    if (done.length) {
      setWaiting((shown) => Object.fromEntries(Object.entries(shown).filter(([s]) => !done.some((c) => c.server === s))));
    }
  }, [connections, waiting]);
  useEffect(() => {
    if (!pending) return undefined;
    const timer = setInterval(reload, poll);
    window.addEventListener("focus", reload);
    return () => {
      clearInterval(timer);
      window.removeEventListener("focus", reload);
    };
  }, [pending, reload, poll]);

  const revoke = async (server) => {
    setNotice(null);
    await request(credentials, `/connections/${encodeURIComponent(server)}`, { method: "DELETE" });
    setNotice(`Your connection to ${server} was revoked.`);
    await reload();
  };

  if (!connections.length) {
    return (
      <p className="empty" data-testid="no-connections">
        This agent has no servers that act as you (no server in its mcp.json has <code>oauth</code>).
      </p>
    );
  }
  return (
    <>
      <p className="hint">
        These servers act as you: the agent uses your own account there. Your tokens stay on the
        server, sealed; the console never sees them.
      </p>
      {notice ? (
        <p role="status" className="hint" data-testid="connections-notice">
          {notice}
        </p>
      ) : null}
      <Table testId="connections" caption="Your connections" columns={COLUMNS}>
        {connections.map((connection) => (
          <Row
            key={connection.server}
            connection={connection}
            waiting={connection.connected ? null : waiting[connection.server]}
            onOpened={(server, opened) => setWaiting((shown) => ({ ...shown, [server]: opened }))}
            onRevoke={revoke}
          />
        ))}
      </Table>
    </>
  );
}
