// A button that shows or hides its panel (aria-expanded), for the chat's collapsible items.
import { useId, useState } from "react";

export function Disclosure({ label, className = "", testId, children, initiallyOpen = false }) {
  const [open, setOpen] = useState(initiallyOpen);
  const panel = useId();
  return (
    <div className={`disclosure ${className}`} data-testid={testId}>
      <button
        type="button"
        className="disclosure-toggle"
        aria-expanded={open}
        aria-controls={panel}
        onClick={() => setOpen(!open)}
      >
        {label}
      </button>
      <div id={panel} className="disclosure-panel" hidden={!open}>
        {open ? children : null}
      </div>
    </div>
  );
}
