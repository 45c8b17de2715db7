// An action that asks first: its button, then the question with a yes and a no — the no gets
// the focus, so the keyboard answers at once, and the button gets it back after a no.
import { useEffect, useRef, useState } from "react";
import { describeError } from "./api.js";

/** `onConfirm` (async) does it; when it throws, its error shows next to the question. */
export function Confirm({ label, className = "danger", question, group, yes, yesClass = "", no, onConfirm }) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const noButton = useRef(null);
  const opener = useRef(null);
  const wasAsking = useRef(false);

  useEffect(() => {
    if (asking) noButton.current?.focus();
    else if (wasAsking.current) opener.current?.focus();
    wasAsking.current = asking;
  }, [asking]);

  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      setAsking(false);
    } catch (failure) {
      setError(describeError(failure));
    } finally {
      setBusy(false);
    }
  };

  if (!asking) {
    return (
      <button type="button" className={className} ref={opener} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <span className="confirm" role="group" aria-label={group}>
      <span>{question}</span>
      <button type="button" className={yesClass || undefined} disabled={busy} onClick={confirm}>
        {yes}
      </button>
      <button type="button" className="secondary" ref={noButton} disabled={busy} onClick={() => setAsking(false)}>
        {no}
      </button>
      {error ? (
        <span role="alert" className="error">
          {error}
        </span>
      ) : null}
    </span>
  );
}
