// Links to the API's docs (public) and its Prometheus metrics: /metrics needs the
// deployment key, which a plain link would not send, so the console fetches it and shows
// the agentctl_* lines.
import { useState } from "react";
import { Alert } from "../Alert.jsx";
import { API_URL, request } from "../api.js";
import { useConsole } from "../context.js";

export function Metrics() {
  const { credentials } = useConsole();
  const [text, setText] = useState(null);
  const [error, setError] = useState(null);
  const [all, setAll] = useState(false);
  const load = async () => {
    setError(null);
    try {
      setText(await request(credentials, "/metrics", { text: true }));
    } catch (failure) {
      setError(failure);
    }
  };
  const lines = (text ?? "").split("\n").filter((line) => all || line.startsWith("agentctl_"));
  return (
    <>
      <p>
        {/* noopener: the docs page (Swagger UI, from a CDN) gets no hold on this tab */}
        <a href={`${API_URL}/docs`} target="_blank" rel="noopener noreferrer">
          API docs (/docs)
        </a>{" "}
        ·{" "}
        <button type="button" className="secondary" onClick={load}>
          {text === null ? "Show the metrics (/metrics)" : "Refresh the metrics"}
        </button>{" "}
        {text !== null ? (
          <label>
            <input
              type="checkbox"
              checked={all}
              onChange={(event) => setAll(event.target.checked)}
            />{" "}
            every metric
          </label>
        ) : null}
      </p>
      <Alert error={error} />
      {text !== null ? (
        <pre data-testid="metrics" tabIndex={0} aria-label="Metrics of this replica">
          {lines.join("\n")}
        </pre>
      ) : null}
    </>
  );
}
