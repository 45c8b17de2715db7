// The chat's keyboard shortcuts, and the list that tells them ("Keyboard shortcuts" under the
// composer, or "?").
import { useEffect, useRef, useState } from "react";

export const SHORTCUTS = [
  ["Alt+Shift+N", "New chat"],
  ["/", "Focus the message box"],
  ["Enter", "Send (Shift+Enter: a new line)"],
  ["Esc", "Stop the agent"],
  ["?", "Show or hide these shortcuts"],
];

/** Whether the key was typed into a field (where "/" and "?" are text). */
function typing(event) {
  const target = event.target;
  return target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
}

/** Alt+Shift+N: `onNewChat()`; Esc: `onStop()` (it does nothing when no run goes on); "/":
 * the message box. */
export function useShortcuts({ onNewChat, onStop }) {
  const handlers = useRef({ onNewChat, onStop });
  handlers.current = { onNewChat, onStop };
  useEffect(() => {
    const onKey = (event) => {
      if (event.defaultPrevented || event.isComposing) return;
      if (event.altKey && event.shiftKey && !event.ctrlKey && !event.metaKey && event.code === "KeyN") {
        event.preventDefault();
        handlers.current.onNewChat();
      } else if (event.key === "Escape" && !event.altKey && !event.ctrlKey && !event.metaKey) {
        handlers.current.onStop();
      } else if (event.key === "/" && !typing(event) && !event.ctrlKey && !event.metaKey && !event.altKey) {
        event.preventDefault();
        document.getElementById("prompt")?.focus();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
}

export function Shortcuts() {
  const [open, setOpen] = useState(false);
  useEffect(() => {
    const onKey = (event) => {
      if (event.key === "?" && !typing(event) && !event.ctrlKey && !event.metaKey) setOpen((shown) => !shown);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
  return (
    <div className="shortcuts">
      <button
        type="button"
        className="link"
        aria-expanded={open}
        aria-controls="shortcut-list"
        aria-keyshortcuts="?"
        onClick={() => setOpen(!open)}
      >
        Keyboard shortcuts
      </button>
      {open ? (
        <dl id="shortcut-list" className="shortcut-list">
          {SHORTCUTS.map(([keys, what]) => (
            <div key={keys}>
              <dt>
                <kbd>{keys}</kbd>
              </dt>
              <dd>{what}</dd>
            </div>
          ))}
        </dl>
      ) : null}
    </div>
  );
}
