import { useCallback } from "react";

// A ref for a field that takes the focus when it appears (what React's `autoFocus` does;
// Preact only sets the attribute, which a browser honours on page load alone).
export function useAutoFocus() {
  return useCallback((node) => node?.focus(), []);
}
