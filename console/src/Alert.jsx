// An error shown plainly: `children`, or what `error` says (nothing when there is neither).
import { describeError } from "./api.js";

export function Alert({ error, children, className = "", testId }) {
  if (!children && !error) return null;
  return (
    <p role="alert" className={`error ${className}`.trim()} data-testid={testId}>
      {children ?? describeError(error)}
    </p>
  );
}
