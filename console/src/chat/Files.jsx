// The files the agent wrote (the deep agent's state `files`: path -> {content, ...}).
import { Disclosure } from "./Disclosure.jsx";
import { fileText } from "./text.js";

export function Files({ files }) {
  const paths = Object.keys(files ?? {}).sort();
  if (!paths.length) return null;
  return (
    <section className="files panel" aria-labelledby="files-title">
      <h2 id="files-title">Files</h2>
      <ul>
        {paths.map((path) => (
          <li key={path}>
            <Disclosure className="file" testId="file" label={<code>{path}</code>}>
              <pre aria-label={`Content of ${path}`}>{fileText(files[path])}</pre>
            </Disclosure>
          </li>
        ))}
      </ul>
    </section>
  );
}
