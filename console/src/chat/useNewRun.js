// While the chat waits on something that resumes the thread from elsewhere (a connection
// the provider's callback completes, in another tab), watch the thread for a run newer than
// the one shown: every `every` ms, and at once when the window gets the focus back.
import { useEffect, useRef } from "react";

const POLL_MS = 1500;

/** Calls `onNewRun(run)` once the newest run of `threadId` is not the one that was newest
 * when `watching` turned true; nothing while `watching` is false. */
export function useNewRun(client, threadId, watching, onNewRun, every = POLL_MS) {
  const handler = useRef(onNewRun);
  handler.current = onNewRun;
  useEffect(() => {
    if (!watching || !threadId) return undefined;
    let stopped = false;
    let known; // the newest run's id when watching began (null: the thread has none)
    let inFlight = false;
    const newest = async () => (await client.runs.list(threadId, { limit: 1 }))[0] ?? null;
    const check = async () => {
      if (stopped || inFlight) return;
      inFlight = true;
      try {
        const run = await newest();
        if (stopped) return;
        if (known === undefined) known = run?.run_id ?? null;
        else if (run && run.run_id !== known) {
          stopped = true;
          handler.current(run);
        }
      } catch {
        // A failed look is only that: the next one may answer.
      } finally {
        inFlight = false;
      }
    };
    check();
    const timer = setInterval(check, every);
    const onVisible = () => document.visibilityState === "visible" && check();
    window.addEventListener("focus", check);
    document.addEventListener("visibilitychange", onVisible);
    return () => {
      stopped = true;
      clearInterval(timer);
      window.removeEventListener("focus", check);
      document.removeEventListener("visibilitychange", onVisible);
    };
  }, [client, threadId, watching, every]);
}
