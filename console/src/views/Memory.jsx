// The Memory view: the signed-in user's own memory file (view and edit), and the running
// revision's instructions, skills and subagents (read only), from GET /agent.
import { Alert } from "../Alert.jsx";
import { request } from "../api.js";
import { useConsole } from "../context.js";
import { AgentFiles } from "../memory/AgentFiles.jsx";
import { UserMemory } from "../memory/UserMemory.jsx";
import { useRequest } from "../useRequest.js";

function YourMemory({ memory }) {
  const { info } = useConsole();
  if (!memory) {
    return <p className="empty">This agent keeps no per-user memory (its project has no user/ folder).</p>;
  }
  if (!memory.namespace) {
    return (
      <p className="hint" data-testid="memory-needs-user">
        {info.credentials?.bearer
          ? "Memory needs a signed-in user: sign in with your user token to see and edit yours."
          : "Memory needs a signed-in user, and this server signs no users in: add [auth] to agent.toml."}
      </p>
    );
  }
  return <UserMemory memory={memory} />;
}

export function Memory() {
  const { credentials } = useConsole();
  const { data: agent, error } = useRequest(() => request(credentials, "/agent"), [credentials]);

  return (
    <section className="memory" aria-labelledby="memory-title">
      <h1 id="memory-title" tabIndex={-1}>
        Memory
      </h1>
      <Alert error={error} />
      {agent ? (
        <>
          <section aria-labelledby="your-memory-title">
            <h2 id="your-memory-title">Your memory</h2>
            <YourMemory memory={agent.user_memory} />
          </section>
          <AgentFiles agent={agent} />
        </>
      ) : null}
      {!agent && !error ? <p className="status">Loading…</p> : null}
    </section>
  );
}
