// The Memory view (being built).
export function Memory() {
  return <p>Memory: coming in this change.</p>;
}
