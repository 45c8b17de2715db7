// The signed-in user's /memories/user/AGENTS.md: the store item the agent reads at each run
// (at the namespace GET /agent names), viewed and edited here.
import { useEffect, useState } from "react";
import { describeError } from "../api.js";
import { useConsole } from "../context.js";

/** The text of a file item as deepagents keeps it (`content`: a string, or lines). */
export function fileText(value) {
  const content = value?.content;
  if (Array.isArray(content)) return content.join("\n");
  return typeof content === "string" ? content : "";
}

export function UserMemory({ memory }) {
  const { client } = useConsole();
  const [item, setItem] = useState(undefined); // undefined: loading; null: none yet
  const [text, setText] = useState("");
  const [saving, setSaving] = useState(false);
  const [outcome, setOutcome] = useState(null); // {ok, message}

  useEffect(() => {
    let live = true;
    client.store.getItem(memory.namespace, memory.key).then(
      (found) => {
        if (!live) return;
        setItem(found);
        setText(found ? fileText(found.value) : memory.template);
      },
      (failure) => live && setOutcome({ ok: false, message: describeError(failure) }),
    );
    return () => {
      live = false;
    };
  }, [client, memory]);

  const save = async (event) => {
    event.preventDefault();
    setSaving(true);
    setOutcome(null);
    const now = new Date().toISOString();
    const value = {
      ...(item?.value ?? {}),
      content: text,
      encoding: "utf-8",
      created_at: item?.value?.created_at ?? now,
      modified_at: now,
    };
    try {
      await client.store.putItem(memory.namespace, memory.key, value);
      setItem({ ...(item ?? {}), value });
      setOutcome({ ok: true, message: "Saved: the agent reads it from your next message on." });
    } catch (failure) {
      setOutcome({ ok: false, message: `Not saved: ${describeError(failure)}` });
    } finally {
      setSaving(false);
    }
  };

  if (item === undefined && !outcome) return <p className="status">Loading your memory…</p>;
  return (
    <form className="memory-editor" onSubmit={save} aria-label="Your memory">
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
        <button type="submit" disabled={saving || item === undefined}>
          {saving ? "Saving…" : "Save"}
        </button>
        {outcome ? (
          <p role={outcome.ok ? "status" : "alert"} className={outcome.ok ? "ok" : "error"}>
            {outcome.message}
          </p>
        ) : null}
      </div>
    </form>
  );
}
