// The page a consent request's link opens (`#/connect/<flow id>`: the `authorization_url` of a
// `connection_required` interrupt, an A2A task's or an MCP tool error's link). Only the
// request's own user can go on: the console's sign-in first (the frame shows it to a visitor
// who is not signed in, then comes back here), then GET /connections/flows/{id} — anyone
// else's request is a 404 — and Continue sends this tab to the provider (POST
// /connections/flows/{id}/redirect, which binds the provider's callback to this browser).
// The callback's page then says connected and links back here, to the console.
import { useState } from "react";
import { Alert } from "../Alert.jsx";
import { describeError } from "../api.js";
import { flowOf, goToSignIn, isExpired } from "../connections/provider.js";
import { useConsole } from "../context.js";
import { href } from "../route.js";
import { Time } from "../time.jsx";
import { useRequest } from "../useRequest.js";

function Frame({ title, children }) {
  return (
    <section className="connect-request" aria-labelledby="connect-title" data-testid="connect-request">
      <h1 id="connect-title" tabIndex={-1}>
        {title}
      </h1>
      {children}
    </section>
  );
}

/** What a visitor who is no user sees: only a signed-in user has connection requests. */
function NotAUser() {
  const { caller, info } = useConsole();
  return (
    <Frame title="Connect an account">
      <p className="hint" data-testid="connect-needs-user">
        {caller === "operator"
          ? "This request is for the user who asked the agent to connect their account; the deployment key is no user. Sign out, then sign in as that user."
          : info.credentials?.bearer
            ? "Sign in as the user who asked the agent to connect their account."
            : "This agent signs no users in, so it has no requests to connect an account."}
      </p>
    </Frame>
  );
}

/** Continue (or Ask again): this tab goes to the provider's sign-in page. */
function ToProvider({ flow, label, again, onStale }) {
  const { credentials } = useConsole();
  const [going, setGoing] = useState(false);
  const [error, setError] = useState(null);
  const go = async () => {
    setGoing(true);
    setError(null);
    try {
      await goToSignIn(credentials, again ? { server: flow.server } : { flowId: flow.flow_id });
    } catch (failure) {
      setGoing(false);
      if (!again && isExpired(failure)) onStale();
      else setError(failure);
    }
  };
  return (
    <>
      <div className="gate-buttons">
        <button type="button" disabled={going} onClick={go}>
          {going ? `Going to ${flow.server}…` : label}
        </button>
      </div>
      {error ? <Alert>Connecting {flow.server} failed: {describeError(error)}</Alert> : null}
    </>
  );
}

function BackToConversation({ flow }) {
  return flow.thread_id ? (
    <p>
      <a href={href("chat", flow.thread_id)}>Back to the conversation</a>
    </p>
  ) : null;
}

function Request({ flow, reload }) {
  const { server, user, agent } = flow;
  const title = `Connect ${server} for ${user} on ${agent}`;
  if (flow.status === "pending") {
    return (
      <Frame title={title}>
        {flow.description ? <p className="connect-description">{flow.description}</p> : null}
        <p>
          The agent <b>{agent}</b> asks to use <b>{server}</b> as you, <b>{user}</b>, with the account
          you sign in with at {server} next. Continue only if you asked the agent for this yourself.
        </p>
        <p className="hint">
          This request expires at <Time value={flow.expires_at} />.
        </p>
        <ToProvider flow={flow} label="Continue" onStale={reload} />
      </Frame>
    );
  }
  if (flow.status === "done") {
    return (
      <Frame title={title}>
        <p data-testid="connect-done">
          {server} is connected for {user}: this request was answered.
        </p>
        <BackToConversation flow={flow} />
      </Frame>
    );
  }
  return (
    <Frame title={title}>
      <p data-testid="connect-stale">
        {flow.status === "expired" ? (
          <>
            This request to connect {server} expired at <Time value={flow.expires_at} />
          </>
        ) : (
          <>This request to connect {server} was used already (its sign-in page was opened)</>
        )}
        : ask again for a new one. Once connected, ask the agent again in the conversation.
      </p>
      <ToProvider flow={flow} label="Ask again" again />
      <BackToConversation flow={flow} />
    </Frame>
  );
}

/** `id`: the flow's id, from the address. */
export function ConnectRequest({ id }) {
  const { credentials, caller } = useConsole();
  const isUser = caller === "user";
  const { data: flow, error, reload } = useRequest(() => flowOf(credentials, id), [credentials, id], {
    skip: !isUser || !id,
  });
  if (!isUser) return <NotAUser />;
  if (error?.status === 404 || !id) {
    return (
      <Frame title="Not your request">
        <p role="alert" className="error" data-testid="connect-not-yours">
          This request to connect an account is not yours: it belongs to another user, or there is
          no such request. Nothing was connected. Sign out and sign in as the user who asked the
          agent — or, if that is you, ask the agent again.
        </p>
      </Frame>
    );
  }
  if (error) {
    return (
      <Frame title="Connect an account">
        <Alert error={error} />
      </Frame>
    );
  }
  if (!flow) {
    return (
      <Frame title="Connect an account">
        <p className="status">Loading…</p>
      </Frame>
    );
  }
  return <Request flow={flow} reload={reload} />;
}
