// One operator endpoint's answer, fetched with the visitor's credentials and again every
// `every` ms (0: only on `reload`).
import { request } from "../api.js";
import { useConsole } from "../context.js";
import { useRequest } from "../useRequest.js";

export function usePlatform(path, { every = 0, skip = false } = {}) {
  const { credentials } = useConsole();
  return useRequest(() => request(credentials, path), [credentials, path], { every, skip });
}
