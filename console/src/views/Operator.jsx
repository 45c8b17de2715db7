// The operator's view (the deployment key, or anyone on a server without [auth]): the
// revisions and rollback, runs in flight and queued, the sandboxes, /metrics and /docs. The
// API answers 403 to anyone else, and the console says so.
import { useConsole } from "../context.js";
import { Metrics } from "../operator/Metrics.jsx";
import { Revisions } from "../operator/Revisions.jsx";
import { Runs } from "../operator/Runs.jsx";
import { Sandboxes } from "../operator/Sandboxes.jsx";

const SECTIONS = [
  { id: "revisions", title: "Revisions", Component: Revisions },
  { id: "runs", title: "Runs in flight and queued", Component: Runs },
  { id: "sandboxes", title: "Sandboxes", Component: Sandboxes },
  { id: "metrics", title: "Metrics and API docs", Component: Metrics },
];

export function Operator() {
  const { info } = useConsole();
  return (
    <div className="operator">
      <h1 tabIndex={-1}>Operator</h1>
      <p className="muted" data-testid="serving">
        Serving {info.graph ?? "no agent yet"}
        {info.revision_number ? `, revision ${info.revision_number}` : ""}
        {info.revision ? ` (${info.revision.slice(0, 12)})` : ""} on{" "}
        {info.storage ?? "this server"}.
      </p>
      {SECTIONS.map(({ id, title, Component }) => (
        <section key={id} className="panel" aria-labelledby={`operator-${id}`}>
          <h2 id={`operator-${id}`}>{title}</h2>
          <Component />
        </section>
      ))}
    </div>
  );
}
