import { createContext, useContext } from "react";

/** What every view uses: `info` (GET /info), `credentials`, `client` (the SDK's, acting with
 * them), `caller` ("user", "operator" or "anonymous"), `signOut` and `refreshInfo` (GET /info
 * again). */
export const ConsoleContext = createContext(null);

export function useConsole() {
  return useContext(ConsoleContext);
}
