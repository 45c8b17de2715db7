// The Threads view (being built).
export function Threads() {
  return <p>Threads: coming in this change.</p>;
}
