// Deleting a thread takes two steps: "Delete", then "Yes" (or "No") — the question gets the
// focus, so the keyboard answers it at once.
import { useEffect, useRef, useState } from "react";
import { describeError } from "../api.js";

export function ConfirmDelete({ label, onDelete }) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const no = useRef(null);
  const deleteButton = useRef(null);
  const wasAsking = useRef(false);

  useEffect(() => {
    if (asking) no.current?.focus();
    else if (wasAsking.current) deleteButton.current?.focus();
    wasAsking.current = asking;
  }, [asking]);

  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await onDelete();
    } catch (failure) {
      setError(describeError(failure));
      setBusy(false);
    }
  };

  if (!asking) {
    return (
      <button type="button" className="danger" ref={deleteButton} onClick={() => setAsking(true)}>
        Delete<span className="visually-hidden"> {label}</span>
      </button>
    );
  }
  return (
    <span className="confirm" role="group" aria-label={`Delete ${label}?`}>
      <span>Delete?</span>
      <button type="button" className="danger" disabled={busy} onClick={confirm}>
        Yes
      </button>
      <button type="button" className="secondary" ref={no} disabled={busy} onClick={() => setAsking(false)}>
        No
      </button>
      {error ? (
        <span role="alert" className="error">
          {error}
        </span>
      ) : null}
    </span>
  );
}
