// The Operator view (being built).
export function Operator() {
  return <p>Operator: coming in this change.</p>;
}
