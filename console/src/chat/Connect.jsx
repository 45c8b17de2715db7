// A run waits for the user to connect their account on a user-owned MCP server (the
// `connection_required` interrupt): the server, what it is for, and a button that opens the
// provider's sign-in page in a new tab. The provider's callback resumes the run by itself (the
// chat follows it); an expired request is said so, with a way to ask again.
import { useEffect, useId, useState } from "react";
import { Alert } from "../Alert.jsx";
import { describeError } from "../api.js";
import { isExpired, openSignIn } from "../connections/provider.js";
import { useConsole } from "../context.js";
import { Time } from "../time.jsx";

/** True when `interrupt` asks the user to connect an account (rather than another interrupt). */
export function isConnectionRequest(interrupt) {
  const value = interrupt?.value;
  return value?.type === "connection_required" && typeof value.server === "string" && Boolean(value.flow_id);
}

/** Whether the time `expiresAt` has passed; turns true by itself when it does. */
function usePassed(expiresAt) {
  const at = Date.parse(expiresAt ?? "");
  const [passed, setPassed] = useState(() => at <= Date.now());
  useEffect(() => {
    if (Number.isNaN(at)) return undefined;
    const left = at - Date.now();
    setPassed(left <= 0);
    if (left <= 0) return undefined;
    const timer = setTimeout(() => setPassed(true), Math.min(left + 50, 2 ** 31 - 1));
    return () => clearTimeout(timer);
  }, [at]);
  return passed;
}

export function Connect({ interrupt, busy, onAskAgain }) {
  const { credentials } = useConsole();
  const request = interrupt.value;
  const { server } = request;
  const title = useId();
  const [state, setState] = useState({ step: "ready" }); // ready | opening | opened | expired
  const [error, setError] = useState(null);
  const passed = usePassed(request.expires_at);
  const expired = passed || state.step === "expired";

  const connect = async () => {
    setError(null);
    setState({ step: "opening" });
    try {
      const { url, blocked } = await openSignIn(credentials, { flowId: request.flow_id });
      setState({ step: "opened", url, blocked });
    } catch (failure) {
      if (isExpired(failure)) setState({ step: "expired" });
      else {
        setState({ step: "ready" });
        setError(failure);
      }
    }
  };

  return (
    <section className="connect panel" aria-labelledby={title} data-testid="connect">
      <h2 id={title}>
        Connect <code>{server}</code>
      </h2>
      {request.description ? <p className="connect-description">{request.description}</p> : null}
      {expired ? (
        <>
          <p data-testid="connect-expired">
            This request to connect {server} expired
            {request.expires_at ? (
              <>
                {" "}
                (<Time value={request.expires_at} />)
              </>
            ) : null}
            . Ask again to get a new one.
          </p>
          <div className="gate-buttons">
            <button type="button" disabled={busy} onClick={() => onAskAgain(interrupt)}>
              Ask again
            </button>
          </div>
        </>
      ) : (
        <>
          <p>
            The agent acts as you on {server}: connect your account there to go on. Its sign-in
            page opens in a new tab; once you are connected the agent continues here by itself.
          </p>
          <div className="gate-buttons">
            <button type="button" disabled={busy || state.step === "opening"} onClick={connect}>
              {state.step === "opened" ? `Connect ${server} again` : `Connect ${server}`}
            </button>
          </div>
          {state.step === "opened" ? (
            <p className="hint" role="status" data-testid="connect-waiting">
              {state.blocked ? (
                <>
                  Your browser blocked the new tab:{" "}
                  <a href={state.url} target="_blank" rel="noopener noreferrer">
                    open {server}'s sign-in page
                  </a>
                  .{" "}
                </>
              ) : null}
              Waiting for you to connect {server}…
            </p>
          ) : null}
        </>
      )}
      {error ? <Alert>Connecting {server} failed: {describeError(error)}</Alert> : null}
    </section>
  );
}
