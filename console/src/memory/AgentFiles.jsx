// What the running revision tells its agent, read only: AGENTS.md, skills and subagents.

function Skills({ skills }) {
  if (!skills.length) return <p className="empty">No skills.</p>;
  return (
    <ul className="files">
      {skills.map((skill) => (
        <li key={skill.name}>
          <details>
            <summary>
              <strong>{skill.name}</strong> — {skill.description}
            </summary>
            <pre>{skill.content}</pre>
          </details>
        </li>
      ))}
    </ul>
  );
}

export function AgentFiles({ agent }) {
  return (
    <>
      <section aria-labelledby="instructions-title">
        <h2 id="instructions-title">Instructions (AGENTS.md)</h2>
        <pre data-testid="instructions">{agent.instructions}</pre>
      </section>
      <section aria-labelledby="skills-title">
        <h2 id="skills-title">Skills</h2>
        <Skills skills={agent.skills} />
      </section>
      <section aria-labelledby="subagents-title">
        <h2 id="subagents-title">Subagents</h2>
        {agent.subagents.length ? (
          <ul className="files">
            {agent.subagents.map((sub) => (
              <li key={sub.name}>
                <details>
                  <summary>
                    <strong>{sub.name}</strong> — {sub.description}
                  </summary>
                  <pre>{sub.instructions}</pre>
                  {sub.skills.length ? (
                    <>
                      <h3>Skills of {sub.name}</h3>
                      <Skills skills={sub.skills} />
                    </>
                  ) : null}
                </details>
              </li>
            ))}
          </ul>
        ) : (
          <p className="empty">No subagents.</p>
        )}
      </section>
    </>
  );
}
