// Hash routes (`#/threads/<id>`): the console is one page at /ui/, whatever path prefix the
// server sits behind, and a reload or a shared link comes back to the same view.
import { useEffect, useState } from "react";

/** The current route: `{view, id}` from `#/<view>/<id>`. */
export function parseRoute(hash = window.location.hash) {
  const [view = "", id = null] = hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  return { view: view || "chat", id: id || null };
}

export function href(view, id) {
  return id ? `#/${view}/${encodeURIComponent(id)}` : `#/${view}`;
}

export function navigate(view, id, { replace = false } = {}) {
  const target = href(view, id);
  if (replace) window.history.replaceState(null, "", target);
  else window.location.hash = target;
  if (replace) window.dispatchEvent(new HashChangeEvent("hashchange"));
}

export function useRoute() {
  const [route, setRoute] = useState(parseRoute);
  useEffect(() => {
    const changed = () => setRoute(parseRoute());
    window.addEventListener("hashchange", changed);
    return () => window.removeEventListener("hashchange", changed);
  }, []);
  return route;
}
