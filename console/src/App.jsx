// The console's frame: who the visitor is (sign-in), the agent it talks to (GET /info), the
// navigation and the view the address names.
import { useCallback, useEffect, useMemo, useState } from "react";
import { describeError, loadCredentials, makeClient, request, saveCredentials } from "./api.js";
import { ConsoleContext } from "./context.js";
import { finishSignIn } from "./oidc.js";
import { href, useRoute } from "./route.js";
import { SignIn } from "./SignIn.jsx";
import { VIEWS } from "./views/index.js";

function callerOf(credentials) {
  if (credentials?.kind === "token") return "user";
  if (credentials?.kind === "key") return "operator";
  return "anonymous";
}

export function App() {
  const route = useRoute();
  const [info, setInfo] = useState(null);
  const [infoError, setInfoError] = useState(null);
  const [credentials, setCredentials] = useState(loadCredentials);

  const [signInError, setSignInError] = useState(null);

  useEffect(() => {
    request(null, "/info").then(setInfo, setInfoError);
  }, []);
  // After a rollback: the revision the header names.
  const refreshInfo = useCallback(() => request(null, "/info").then(setInfo), []);

  // Back from the identity provider's sign-in page: exchange its code for a token.
  const provider = info?.credentials?.oidc;
  useEffect(() => {
    if (!provider) return;
    finishSignIn(provider).then((token) => {
      if (!token) return;
      const given = { kind: "token", value: token };
      saveCredentials(given);
      setCredentials(given);
    }, setSignInError);
  }, [provider]);

  const context = useMemo(() => {
    const signIn = (given) => {
      saveCredentials(given);
      setCredentials(given);
    };
    return {
      info,
      credentials,
      caller: callerOf(credentials),
      client: makeClient(credentials),
      signIn,
      signOut: () => signIn(null),
      refreshInfo,
    };
  }, [info, credentials, refreshInfo]);

  if (infoError) {
    return (
      <main className="page">
        <p role="alert" className="error">
          The server did not answer GET /info: {describeError(infoError)}
        </p>
      </main>
    );
  }
  if (!info) return <p className="loading">Loading the console…</p>;

  const needsSignIn = !credentials && !info.credentials?.anonymous;
  const views = VIEWS.filter((view) => view.shown(context));
  const current = views.find((view) => view.id === route.view) ?? views[0];
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
          {views.map((view) => (
            <a
              key={view.id}
              href={href(view.id)}
              aria-current={view === current ? "page" : undefined}
            >
              {view.title}
            </a>
          ))}
        </nav>
        <SignIn />
      </header>
      <main className="page" id="main">
        {signInError ? (
          <p role="alert" className="error">
            Signing in failed: {describeError(signInError)}
          </p>
        ) : null}
        {needsSignIn ? (
          <section className="panel" aria-labelledby="signin-needed">
            <h1 id="signin-needed">Sign in</h1>
            <p>This agent needs a signed-in user: give your token (or the deployment key) above.</p>
          </section>
        ) : (
          <current.Component key={current.id} id={route.id} />
        )}
      </main>
    </ConsoleContext.Provider>
  );
}
