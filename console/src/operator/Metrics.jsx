// Links to the API's docs (public) and its Prometheus metrics: /metrics needs the
// deployment key, which a plain link would not send, so the console fetches it and shows
// the agentctl_* lines.
import { useState } from "react";
import { API_URL, ApiError, authHeaders } from "../api.js";
import { useConsole } from "../context.js";
import { Failure } from "./Table.jsx";

export function Metrics() {
  const { credentials } = useConsole();
  const [text, setText] = useState(null);
  const [error, setError] = useState(null);
  const [all, setAll] = useState(false);
  const load = async () => {
    setError(null);
    try {
      const response = await fetch(`${API_URL}/metrics`, { headers: authHeaders(credentials) });
      const body = await response.text();
      const detail = safeDetail(body) ?? response.statusText;
      if (!response.ok) throw new ApiError(response.status, detail);
      setText(body);
    } catch (failure) {
      setError(failure);
    }
  };
  const lines = (text ?? "").split("\n").filter((line) => all || line.startsWith("agentctl_"));
  return (
    <>
      <p>
        <a href={`${API_URL}/docs`} target="_blank" rel="noreferrer">
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
      <Failure error={error} />
      {text !== null ? (
        <pre data-testid="metrics" tabIndex={0} aria-label="Metrics of this replica">
          {lines.join("\n")}
        </pre>
      ) : null}
    </>
  );
}

function safeDetail(body) {
  try {
    return JSON.parse(body).detail;
  } catch {
    return null;
  }
}
