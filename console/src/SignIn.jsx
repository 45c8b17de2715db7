// Sign-in: a user's bearer token ([auth]) or the deployment key (the operator). The console
// checks the credentials with one request before keeping them (the context's `signIn`), and
// only ever shows what the API lets them see.
import { useState } from "react";
import { Alert } from "./Alert.jsx";
import { describeError } from "./api.js";
import { useAutoFocus } from "./focus.js";
import { useConsole } from "./context.js";
import { startSignIn } from "./oidc.js";

/** Why the visitor must sign in before anything shows, said for the server the console is
 * on: the platform's overview (the deployment key), an agent with `[auth]` (its users;
 * the operator's key only where the server has one: not on `agentctl dev`), or an agent of
 * `agentctl serve` without `[auth]` (its operator only). */
export function signInReason(info, view) {
  const { bearer, api_key: key, oidc } = info.credentials ?? {};
  if (info.platform) return "The platform overview is the operator's: sign in with the deployment key above.";
  if (view === "connect") {
    return "Sign in as the user who asked the agent to connect their account: only they can go on.";
  }
  if (!bearer) return "This agent has no user sign-in ([auth]): only its operator can open it, with the deployment key above.";
  const how = oidc ? `sign in with ${new URL(oidc.issuer).host} above` : "give your user token above";
  return `This agent needs a signed-in user: ${how}${key ? " (or the operator's deployment key)" : ""}.`;
}

export function SignIn() {
  const focus = useAutoFocus();
  const { info, credentials, caller, signIn, signOut } = useConsole();
  const [open, setOpen] = useState(false);
  const [kind, setKind] = useState(info.credentials?.bearer ? "token" : "key");
  const [value, setValue] = useState("");
  const [error, setError] = useState(null);
  const [checking, setChecking] = useState(false);
  const kinds = [
    info.credentials?.bearer && { id: "token", label: "User token" },
    info.credentials?.api_key && { id: "key", label: "Deployment key" },
  ].filter(Boolean);

  if (credentials) {
    return (
      <div className="signin">
        <span data-testid="signed-in-as">
          {caller === "operator" ? "Operator (deployment key)" : "Signed in with a user token"}
        </span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </div>
    );
  }
  if (!kinds.length) return <div className="signin">No sign-in: open to anyone who can reach it</div>;
  const provider = info.credentials?.oidc;
  if (!open) {
    return (
      <div className="signin">
        {provider ? (
          <button
            type="button"
            onClick={() => startSignIn(provider).catch((failure) => setError(describeError(failure)))}
          >
            Sign in with {new URL(provider.issuer).host}
          </button>
        ) : null}
        <button type="button" className={provider ? "secondary" : undefined} onClick={() => setOpen(true)}>
          {provider ? (kinds.length > 1 ? "Use a token or key" : "Use a token") : "Sign in"}
        </button>
        {error ? <Alert>{error}</Alert> : null}
      </div>
    );
  }
  const close = () => {
    setOpen(false);
    setValue("");
    setError(null);
  };
  const submit = async (event) => {
    event.preventDefault();
    setChecking(true);
    setError(null);
    try {
      await signIn({ kind, value: value.trim() });
      close();
    } catch (failure) {
      setError(describeError(failure));
    } finally {
      setChecking(false);
    }
  };
  return (
    <form className="signin" onSubmit={submit} aria-label="Sign in">
      {kinds.length > 1 ? (
        <label>
          With
          <select value={kind} onChange={(event) => setKind(event.target.value)}>
            {kinds.map((k) => (
              <option key={k.id} value={k.id}>
                {k.label}
              </option>
            ))}
          </select>
        </label>
      ) : null}
      <label>
        {kinds.find((k) => k.id === kind)?.label ?? kinds[0].label}
        <input
          type="password"
          name="credential"
          autoComplete="off"
          ref={focus}
          required
          value={value}
          onChange={(event) => setValue(event.target.value)}
        />
      </label>
      <button type="submit" disabled={checking}>
        {checking ? "Checking…" : "Sign in"}
      </button>
      <button type="button" className="secondary" onClick={close}>
        Cancel
      </button>
      {error ? <Alert>{error}</Alert> : null}
    </form>
  );
}
