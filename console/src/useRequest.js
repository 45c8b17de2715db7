// One request's answer for a view: fetched on mount and whenever `deps` change (answers to
// older requests, or made with older credentials, are dropped), again on `reload()`, and
// every `every` ms if set (a poll never starts while one is in flight).
import { useCallback, useEffect, useRef, useState } from "react";

const LOADING = { data: undefined, error: null };

/** `{data, error, loading, reload}`; `data` is undefined until the first answer. */
export function useRequest(load, deps, { every = 0, skip = false } = {}) {
  const [state, setState] = useState(LOADING);
  const asked = useRef(0); // only the latest request's answer is kept
  const inFlight = useRef(null);
  // `deps` are the caller's: `load` changes with them.
  const reload = useCallback(() => {
    const ticket = ++asked.current;
    const answer = Promise.resolve()
      .then(load)
      .then(
        (data) => ticket === asked.current && setState({ data, error: null }),
        (error) => ticket === asked.current && setState((shown) => ({ data: shown.data, error })),
      )
      .finally(() => {
        if (inFlight.current === answer) inFlight.current = null;
      });
    inFlight.current = answer;
    return answer;
  }, deps);
  useEffect(() => {
    setState((shown) => (shown === LOADING ? shown : LOADING));
    if (!skip) reload();
    const timer = every && !skip ? setInterval(() => inFlight.current || reload(), every) : null;
    return () => {
      clearInterval(timer);
      asked.current += 1;
      inFlight.current = null;
    };
  }, [reload, every, skip]);
  return { ...state, loading: state.data === undefined && !state.error, reload };
}
