// One operator endpoint's answer, fetched with the visitor's credentials and again every
// `every` ms (0: only on `reload`).
import { useCallback, useEffect, useState } from "react";
import { request } from "../api.js";
import { useConsole } from "../context.js";

export function usePlatform(path, { every = 0, skip = false } = {}) {
  const { credentials } = useConsole();
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const reload = useCallback(async () => {
    try {
      setData(await request(credentials, path));
      setError(null);
    } catch (failure) {
      setError(failure);
    }
  }, [credentials, path]);
  useEffect(() => {
    if (skip) return undefined;
    reload();
    if (!every) return undefined;
    const timer = setInterval(reload, every);
    return () => clearInterval(timer);
  }, [reload, every, skip]);
  return { data, error, reload };
}

/** `2026-11-25T06:13:24.123Z` as `2026-11-25 06:13:24 UTC`. */
export function when(iso) {
  return iso ? `${iso.replace("T", " ").slice(0, 19)} UTC` : "";
}
