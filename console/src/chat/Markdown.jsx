// An agent's message as Markdown, rendered safely (markdown/render.jsx). The parser, the
// highlighter and the renderer are a chunk of their own, loaded with the first message, off
// the console's first load; until it has loaded, the text shows as it is.
import { useEffect, useMemo, useState } from "react";

let parser = null; // the loaded chunk: {render}
let loading = null;
function loadParser() {
  loading ??= import("./markdown/render.jsx").then((module) => {
    parser = module;
    return module;
  });
  return loading;
}

function useParser() {
  const [loaded, setLoaded] = useState(parser);
  useEffect(() => {
    if (!loaded) loadParser().then(setLoaded, () => {}); // unloaded: the plain text stays
  }, [loaded]);
  return loaded;
}

/** `text` (an agent's message) as Markdown. */
export function Markdown({ text }) {
  const loaded = useParser();
  const content = useMemo(() => (loaded ? loaded.render(text) : null), [loaded, text]);
  if (!content) return <div className="markdown plain">{text}</div>;
  return <div className="markdown">{content}</div>;
}
