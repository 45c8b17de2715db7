// The signed-in user's /memories/user/AGENTS.md: the store item the agent reads at each run
// (at the namespace GET /agent names), viewed and edited here. Saving first checks that the
// agent did not change it since it was loaded (it may, during a conversation).
import { useEffect, useState } from "react";
import { Alert } from "../Alert.jsx";
import { describeError } from "../api.js";
import { fileText } from "../chat/text.js";
import { useConsole } from "../context.js";
import { useRequest } from "../useRequest.js";

/** Whether two versions of the file (item values, or null for none) are the same. */
function sameVersion(a, b) {
  if (!a || !b) return !a && !b;
  return a.modified_at === b.modified_at && fileText(a) === fileText(b);
}

export function UserMemory({ memory }) {
  const { client } = useConsole();
  const loaded = useRequest(() => client.store.getItem(memory.namespace, memory.key), [client, memory]);
  const [item, setItem] = useState(undefined); // undefined: loading; null: none yet
  const [text, setText] = useState("");
  const [saving, setSaving] = useState(false);
  const [outcome, setOutcome] = useState(null); // {ok, message}
  const [changed, setChanged] = useState(false); // the agent changed it since it was loaded

  useEffect(() => {
    if (loaded.data === undefined) return;
    setItem(loaded.data);
    setText(loaded.data ? fileText(loaded.data.value) : memory.template);
    setChanged(false);
    setOutcome(null);
  }, [loaded.data, memory.template]);

  const save = async (event) => {
    event.preventDefault();
    setSaving(true);
    setOutcome(null);
    try {
      const stored = await client.store.getItem(memory.namespace, memory.key);
      if (!sameVersion(stored?.value, item?.value)) {
        setChanged(true);
        return;
      }
      const now = new Date().toISOString();
      const value = {
        ...(item?.value ?? {}),
        content: text,
        encoding: "utf-8", // written as text, whatever it was read as
        created_at: item?.value?.created_at ?? now,
        modified_at: now,
      };
      await client.store.putItem(memory.namespace, memory.key, value);
      setItem({ ...(item ?? {}), value });
      setOutcome({ ok: true, message: "Saved: the agent reads it from your next message on." });
    } catch (failure) {
      setOutcome({ ok: false, message: `Not saved: ${describeError(failure)}` });
    } finally {
      setSaving(false);
    }
  };

  if (item === undefined) {
    return loaded.error ? <Alert error={loaded.error} /> : <p className="status">Loading your memory…</p>;
  }
  return (
    <form className="memory-editor" onSubmit={save} aria-label="Your memory">
      <Alert error={loaded.error} />
      {item === null ? (
        <p className="hint" data-testid="memory-new">
          You have no memory yet. It starts as the agent&apos;s template below; Save creates it.
        </p>
      ) : null}
      <label htmlFor="user-memory">
        Your memory: <code>{memory.path}</code>
      </label>
      <textarea
        id="user-memory"
        rows={12}
        value={text}
        onChange={(event) => {
          setText(event.target.value);
          setOutcome(null);
        }}
      />
      <div className="actions">
        <button type="submit" disabled={saving}>
          {saving ? "Saving…" : "Save"}
        </button>
        {changed ? (
          <div role="alert" className="error" data-testid="memory-changed">
            Not saved: the agent changed your memory since you opened it.{" "}
            <button type="button" className="secondary" onClick={loaded.reload}>
              Load the newer version
            </button>
          </div>
        ) : null}
        {outcome ? (
          <p role={outcome.ok ? "status" : "alert"} className={outcome.ok ? "ok" : "error"}>
            {outcome.message}
          </p>
        ) : null}
      </div>
    </form>
  );
}
