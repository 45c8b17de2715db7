// The caller's threads, most recently updated first, a page at a time; filtered by id,
// status and metadata as `POST /threads/search` takes them.
import { useCallback, useEffect, useRef, useState } from "react";
import { Alert } from "../Alert.jsx";
import { describeError, request } from "../api.js";
import { useConsole } from "../context.js";
import { href } from "../route.js";
import { ConfirmDelete } from "./ConfirmDelete.jsx";
import { Time } from "../time.jsx";
import { titleOf } from "./summary.js";

export const PAGE_SIZE = 20;
const STATUSES = ["idle", "busy", "interrupted", "error"];
const NO_FILTERS = { id: "", status: "", metadata: "" };

/** `key=value, key2=value2` or a JSON object, as a metadata filter; throws on bad input. */
export function parseMetadata(text) {
  const given = text.trim();
  if (!given) return undefined;
  if (given.startsWith("{")) {
    const parsed = JSON.parse(given);
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not an object");
    return parsed;
  }
  const pairs = given.split(",").map((pair) => pair.split("="));
  if (pairs.some((pair) => pair.length !== 2 || !pair[0].trim())) throw new Error("not key=value");
  return Object.fromEntries(pairs.map(([key, value]) => [key.trim(), value.trim()]));
}

function searchBody(filters, offset) {
  let metadata;
  try {
    metadata = parseMetadata(filters.metadata);
  } catch {
    throw new Error('Metadata: write key=value pairs separated by commas, or a JSON object such as {"topic": "x"}');
  }
  return {
    limit: PAGE_SIZE,
    offset,
    sort_by: "updated_at",
    sort_order: "desc",
    select: ["thread_id", "status", "created_at", "updated_at", "metadata"],
    // Only each thread's first message, not its whole state (the JS SDK does not send
    // `extract`, hence the plain request).
    extract: { title: "values.messages[0].content" },
    ...(filters.id.trim() ? { ids: [filters.id.trim()] } : {}),
    ...(filters.status ? { status: filters.status } : {}),
    ...(metadata ? { metadata } : {}),
  };
}

export function ThreadList() {
  const { credentials, client } = useConsole();
  const [draft, setDraft] = useState(NO_FILTERS);
  const [filters, setFilters] = useState(NO_FILTERS);
  const [threads, setThreads] = useState([]);
  const [more, setMore] = useState(false);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState(null);
  const latest = useRef(0); // only the last search's answer is shown

  const load = useCallback(
    async (offset) => {
      const asked = ++latest.current;
      setLoading(true);
      setError(null);
      try {
        const found = await request(credentials, "/threads/search", {
          method: "POST",
          body: searchBody(filters, offset),
        });
        if (asked !== latest.current) return;
        setThreads((shown) => (offset ? [...shown, ...found] : found));
        setMore(found.length === PAGE_SIZE);
      } catch (failure) {
        if (asked !== latest.current) return;
        setError(failure.status ? describeError(failure) : failure.message);
        if (!offset) setThreads([]);
      } finally {
        if (asked === latest.current) setLoading(false);
      }
    },
    [credentials, filters],
  );

  useEffect(() => {
    load(0);
  }, [load]);

  const remove = async (threadId) => {
    await client.threads.delete(threadId);
    setThreads((shown) => shown.filter((thread) => thread.thread_id !== threadId));
  };
  const field = (name) => ({
    value: draft[name],
    onChange: (event) => setDraft({ ...draft, [name]: event.target.value }),
  });

  return (
    <section className="threads" aria-labelledby="threads-title">
      <h1 id="threads-title" tabIndex={-1}>
        Threads
      </h1>
      <form
        className="thread-search"
        role="search"
        aria-label="Search threads"
        onSubmit={(event) => {
          event.preventDefault();
          setFilters({ ...draft });
        }}
      >
        <label>
          Thread id
          <input name="thread-id" placeholder="a thread's UUID" autoComplete="off" {...field("id")} />
        </label>
        <label>
          Status
          <select name="status" {...field("status")}>
            <option value="">any</option>
            {STATUSES.map((status) => (
              <option key={status} value={status}>
                {status}
              </option>
            ))}
          </select>
        </label>
        <label>
          Metadata
          <input name="metadata" placeholder="key=value, …" autoComplete="off" {...field("metadata")} />
        </label>
        <button type="submit">Search</button>
        <button
          type="button"
          className="secondary"
          onClick={() => {
            setDraft(NO_FILTERS);
            setFilters(NO_FILTERS);
          }}
        >
          Clear
        </button>
      </form>
      {error ? <Alert>{error}</Alert> : null}
      {!loading && !error && threads.length === 0 ? <p className="empty">No threads found.</p> : null}
      {threads.length ? (
        <table className="thread-table" data-testid="threads">
          <thead>
            <tr>
              <th scope="col">Conversation</th>
              <th scope="col">Status</th>
              <th scope="col">Updated</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {threads.map((thread) => (
              <tr key={thread.thread_id} data-thread-id={thread.thread_id}>
                <td>
                  <a href={href("threads", thread.thread_id)}>{titleOf(thread)}</a>
                  <div className="thread-id">{thread.thread_id}</div>
                </td>
                <td>
                  <span className={`badge ${thread.status}`}>{thread.status}</span>
                </td>
                <td>
                  <Time value={thread.updated_at} />
                </td>
                <td>
                  <ConfirmDelete label={`thread ${thread.thread_id}`} onDelete={() => remove(thread.thread_id)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {more ? (
        <button type="button" className="secondary" disabled={loading} onClick={() => load(threads.length)}>
          More
        </button>
      ) : null}
      <p className="status" role="status">
        {loading ? "Loading threads…" : ""}
      </p>
    </section>
  );
}
