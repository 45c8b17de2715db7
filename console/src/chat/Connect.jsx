// A run waits for the user to connect their account on a user-owned MCP server (the
// `connection_required` interrupt): the server, what it is for, and a button that opens the
// provider's sign-in page in a new tab. The provider's callback resumes the run by itself
// (the chat follows it). A request that expired, or a tab closed before signing in, can be
// asked again: a new request of the console's own, whose connection the console answers the
// run with once GET /connections shows it.
import { useEffect, useId, useState } from "react";
import { Alert } from "../Alert.jsx";
import { describeError, request } from "../api.js";
import { isExpired, openSignIn } from "../connections/provider.js";
import { useConsole } from "../context.js";
import { Time } from "../time.jsx";

const POLL_MS = 1500;

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

/** Calls `onConnected()` once GET /connections shows `server` connected; only while `watching`
 * (every POLL_MS, and when the window gets the focus back). */
function useConnected(server, watching, onConnected) {
  const { credentials } = useConsole();
  useEffect(() => {
    if (!watching) return undefined;
    let stopped = false;
    const check = async () => {
      try {
        const answer = await request(credentials, "/connections");
        const mine = (answer?.connections ?? []).find((c) => c.server === server);
        if (!stopped && mine?.connected) {
          stopped = true;
          onConnected();
        }
      } catch {
        // The next look may answer.
      }
    };
    const timer = setInterval(check, POLL_MS);
    window.addEventListener("focus", check);
    return () => {
      stopped = true;
      clearInterval(timer);
      window.removeEventListener("focus", check);
    };
  }, [credentials, server, watching]);
}

/** `onConnected(interrupt)`: the user connected through a request of the console's own (the
 * run is not resumed by the callback then: the chat answers the interrupt). */
export function Connect({ interrupt, busy, onConnected }) {
  const { credentials } = useConsole();
  const asked = interrupt.value;
  const { server } = asked;
  const title = useId();
  // ready -> opened (the run's own request) | expired; again: a request of the console's own
  const [state, setState] = useState({ step: "ready", again: false });
  const [opening, setOpening] = useState(false);
  const [error, setError] = useState(null);
  const passed = usePassed(asked.expires_at);
  const expired = !state.again && (passed || state.step === "expired");
  useConnected(server, state.again && state.step === "opened", () => onConnected(interrupt));

  /** Open the sign-in page: for the run's request, or (`again`) for a new one. */
  const open = async (again) => {
    setError(null);
    setOpening(true);
    try {
      const opened = await openSignIn(credentials, again ? { server } : { flowId: asked.flow_id });
      setState({ step: "opened", again, ...opened });
    } catch (failure) {
      if (!again && isExpired(failure)) setState({ step: "expired", again });
      else setError(failure);
    } finally {
      setOpening(false);
    }
  };
  const askAgain = (
    <button
      type="button"
      className={expired ? undefined : "secondary"}
      disabled={busy || opening}
      onClick={() => open(true)}
    >
      Ask again
    </button>
  );

  return (
    <section className="connect panel" aria-labelledby={title} data-testid="connect" data-flow={asked.flow_id}>
      <h2 id={title}>
        Connect <code>{server}</code>
      </h2>
      {asked.description ? <p className="connect-description">{asked.description}</p> : null}
      {expired ? (
        <>
          <p data-testid="connect-expired">
            {passed ? (
              <>
                This request to connect {server} expired at <Time value={asked.expires_at} />
              </>
            ) : (
              <>This request to connect {server} can no longer be used (it was used already, or expired)</>
            )}
            : ask again for a new one.
          </p>
          <div className="gate-buttons">{askAgain}</div>
        </>
      ) : state.step === "opened" ? (
        <>
          <p role="status" data-testid="connect-waiting">
            {state.blocked ? (
              <>
                Your browser blocked the new tab:{" "}
                <a href={state.url} target="_blank" rel="noopener noreferrer">
                  open {server}'s sign-in page
                </a>
                .{" "}
              </>
            ) : null}
            Waiting for you to sign in to {server} in the new tab… the agent goes on here once you
            are connected.
          </p>
          <div className="gate-buttons">
            <span className="hint">Closed that tab?</span>
            {askAgain}
          </div>
        </>
      ) : (
        <>
          <p>
            The agent acts as you on {server}: connect your account there to go on. Its sign-in
            page opens in a new tab; once you are connected the agent goes on here by itself.
          </p>
          <div className="gate-buttons">
            <button type="button" disabled={busy || opening} onClick={() => open(false)}>
              Connect {server}
            </button>
          </div>
        </>
      )}
      {error ? <Alert>Connecting {server} failed: {describeError(error)}</Alert> : null}
    </section>
  );
}
