// The console's frame: who the visitor is (sign-in), the agent it talks to (GET /info), the
// navigation and the view the address names.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { Alert } from "./Alert.jsx";
import {
  checkCredentials,
  describeError,
  loadCredentials,
  makeClient,
  onSessionEnded,
  request,
  saveCredentials,
} from "./api.js";
import { ConsoleContext } from "./context.js";
import { finishSignIn } from "./oidc.js";
import { href, useRoute } from "./route.js";
import { PlatformConsole } from "./platform/PlatformConsole.jsx";
import { SignIn, signInReason } from "./SignIn.jsx";
import { VIEWS } from "./views/index.js";

function callerOf(credentials) {
  if (credentials?.kind === "token") return "user";
  if (credentials?.kind === "key") return "operator";
  return "anonymous";
}

/** On a move to another view (or another thread…), the focus goes to the view's heading,
 * so a screen reader announces it; the chat naming its new thread is no move. */
function useFocusOnRouteChange(route) {
  const shown = useRef(route);
  useEffect(() => {
    const before = shown.current;
    shown.current = route;
    if (before === route || (before.view === "chat" && route.view === "chat")) return undefined;
    if (before.view === route.view && before.id === route.id) return undefined;
    const frame = requestAnimationFrame(() => {
      const heading = document.querySelector("#main h1");
      (heading ?? document.getElementById("main"))?.focus();
    });
    return () => cancelAnimationFrame(frame);
  }, [route]);
}

export function App() {
  const route = useRoute();
  useFocusOnRouteChange(route);
  const [info, setInfo] = useState(null);
  const [infoError, setInfoError] = useState(null);
  const [credentials, setCredentials] = useState(loadCredentials);
  const [signInError, setSignInError] = useState(null);
  const [sessionEnded, setSessionEnded] = useState(false);

  useEffect(() => {
    request(null, "/info").then(setInfo, setInfoError);
  }, []);
  // After a rollback: the revision the header names.
  const refreshInfo = useCallback(() => request(null, "/info").then(setInfo), []);

  const keep = useCallback((given) => {
    saveCredentials(given);
    setCredentials(given);
  }, []);
  /** Check `given` with one request, then keep them; throws when the server refuses them. */
  const signIn = useCallback(
    async (given) => {
      await checkCredentials(given, info);
      keep(given);
      setSessionEnded(false);
      setSignInError(null);
    },
    [keep, info],
  );

  // A user's token the server no longer takes (expired, revoked): sign in again.
  const current = useRef(credentials);
  current.current = credentials;
  useEffect(() => {
    onSessionEnded((refused) => {
      if (current.current?.kind !== "token" || current.current.value !== refused.value) return;
      keep(null);
      setSessionEnded(true);
    });
  }, [keep]);

  // Back from the identity provider's sign-in page: exchange its code for a token.
  const provider = info?.credentials?.oidc;
  useEffect(() => {
    if (!provider) return;
    finishSignIn(provider)
      .then((token) => token && signIn({ kind: "token", value: token }))
      .catch(setSignInError);
  }, [provider, signIn]);

  const client = useMemo(() => makeClient(credentials), [credentials]);
  const context = useMemo(
    () => ({
      info,
      credentials,
      caller: callerOf(credentials),
      client,
      signIn,
      signOut: () => keep(null),
      refreshInfo,
    }),
    [info, credentials, client, signIn, keep, refreshInfo],
  );

  if (infoError) {
    return (
      <main className="page">
        <Alert>The server did not answer GET /info: {describeError(infoError)}</Alert>
      </main>
    );
  }
  if (!info) return <p className="loading">Loading the console…</p>;

  const needsSignIn = !credentials && !info.credentials?.anonymous;
  if (info.platform) {
    return (
      <ConsoleContext.Provider value={context}>
        <PlatformConsole signInError={signInError} />
      </ConsoleContext.Provider>
    );
  }
  const views = VIEWS.filter((view) => view.shown(context));
  const shownView = views.find((view) => view.id === route.view) ?? views[0];
  const listed = views.filter((view) => !view.linked);
  return (
    <ConsoleContext.Provider value={context}>
      <header className="top">
        <a className="brand" href={href("chat")}>
          agentctl <span className="agent">{info.graph ?? "no agent yet"}</span>
        </a>
        {info.revision_number ? (
          <span className="revision" data-testid="revision">
            revision {info.revision_number}
          </span>
        ) : null}
        <nav aria-label="Console">
          {listed.map((view) => (
            <a
              key={view.id}
              href={href(view.id)}
              aria-current={view === shownView ? "page" : undefined}
            >
              {view.title}
            </a>
          ))}
        </nav>
        <SignIn />
      </header>
      <main className="page" id="main" tabIndex={-1}>
        {signInError ? <Alert>Signing in failed: {describeError(signInError)}</Alert> : null}
        {sessionEnded && !credentials ? (
          <Alert testId="session-ended">Your session ended (401): sign in again.</Alert>
        ) : null}
        {needsSignIn ? (
          <section className="panel" aria-labelledby="signin-needed">
            <h1 id="signin-needed" tabIndex={-1}>
              Sign in
            </h1>
            <p data-testid="signin-needed">{signInReason(info, route.view)}</p>
          </section>
        ) : (
          <shownView.Component key={shownView.id} id={route.id} />
        )}
      </main>
    </ConsoleContext.Provider>
  );
}
