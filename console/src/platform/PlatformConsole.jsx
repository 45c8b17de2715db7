// The console at the root of `agentctl serve` hosting several agents (or none yet): the
// platform's overview, for its operator (the deployment key). Each agent's own console is
// at <platform>/agents/<name>/ui/.
import { Alert } from "../Alert.jsx";
import { describeError } from "../api.js";
import { useConsole } from "../context.js";
import { SignIn, signInReason } from "../SignIn.jsx";
import { Overview } from "./Overview.jsx";

export function PlatformConsole({ signInError }) {
  const { info, credentials } = useConsole();
  return (
    <>
      <header className="top">
        <span className="brand">
          agentctl <span className="agent">platform</span>
        </span>
        <span className="revision">
          {info.agents.length === 1 ? "1 agent" : `${info.agents.length} agents`}
        </span>
        <span className="spacer" />
        <SignIn />
      </header>
      <main className="page" id="main" tabIndex={-1}>
        {signInError ? <Alert>Signing in failed: {describeError(signInError)}</Alert> : null}
        {credentials ? (
          <Overview />
        ) : (
          <section className="panel" aria-labelledby="signin-needed">
            <h1 id="signin-needed">Sign in</h1>
            <p data-testid="signin-needed">{signInReason(info)}</p>
          </section>
        )}
      </main>
    </>
  );
}
