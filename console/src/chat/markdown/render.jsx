// Markdown's tokens as React elements (no HTML string is ever put in the page): raw HTML shows
// as the text it is, links open only http(s) and mailto addresses (in a new tab,
// rel=noopener), images show as links, code blocks are highlighted and have a Copy button.
// Part of the chunk loaded with the first message (see ../Markdown.jsx).
import { useMemo, useState } from "react";
import { highlight, lex } from "./parse.js";

const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };
/** Text with its HTML character references (`&amp;`, `&#39;`) as the characters they name. */
function decode(text) {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name) => {
    if (name[0] !== "#") return ENTITIES[name.toLowerCase()] ?? whole;
    const code = name[1] === "x" || name[1] === "X" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
    return code > 0 && code < 0x110000 ? String.fromCodePoint(code) : whole;
  });
}

const SAFE_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);
/** `href` when a link may open it (http, https, mailto), else null. */
function safeHref(href) {
  try {
    const url = new URL(decode(href || "").trim(), window.location.href);
    return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}

function inline(tokens, key = "") {
  return (tokens || []).map((token, index) => {
    const k = `${key}${index}`;
    switch (token.type) {
      case "strong":
        return <strong key={k}>{inline(token.tokens, k)}</strong>;
      case "em":
        return <em key={k}>{inline(token.tokens, k)}</em>;
      case "del":
        return <del key={k}>{inline(token.tokens, k)}</del>;
      case "codespan":
        return <code key={k}>{decode(token.text)}</code>;
      case "br":
        return <br key={k} />;
      case "link":
      case "image": {
        const target = safeHref(token.href);
        const label = token.type === "image" ? decode(token.text || token.href) : inline(token.tokens, k);
        if (!target) return <span key={k}>{label}</span>;
        return (
          <a key={k} href={target} target="_blank" rel="noopener noreferrer nofollow" title={token.title || undefined}>
            {label}
          </a>
        );
      }
      case "text":
        return token.tokens ? inline(token.tokens, k) : decode(token.text);
      default: // escape, html (shown as text, never as markup), and anything new
        return token.text ?? token.raw ?? "";
    }
  });
}

function CodeBlock({ code, lang, highlight }) {
  const [copied, setCopied] = useState(null);
  const pieces = useMemo(() => highlight(code, lang), [code, lang, highlight]);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(code);
      setCopied("Copied");
    } catch {
      setCopied("Copy failed: select the code and copy it");
    }
    setTimeout(() => setCopied(null), 2000);
  };
  return (
    <div className="code-block">
      <div className="code-head">
        <span className="code-lang">{lang || "code"}</span>
        <button type="button" className="secondary copy" onClick={copy} aria-label={copied ?? `Copy ${lang || ""} code`.replace("  ", " ")}>
          {copied ?? "Copy"}
        </button>
      </div>
      <pre>
        <code>
          {pieces
            ? pieces.map(([kind, text], index) => (
                <span key={index} className={`hl-${kind}`}>
                  {text}
                </span>
              ))
            : code}
        </code>
      </pre>
    </div>
  );
}

function blocks(tokens, highlight, key = "") {
  return (tokens || []).map((token, index) => {
    const k = `${key}${index}`;
    switch (token.type) {
      case "space":
      case "def":
        return null;
      case "heading": {
        // Inside a message, headings sit below the page's own h1: h2 and lower.
        const Tag = `h${Math.min(6, token.depth + 1)}`;
        return <Tag key={k}>{inline(token.tokens, k)}</Tag>;
      }
      case "paragraph":
        return <p key={k}>{inline(token.tokens, k)}</p>;
      case "code":
        return <CodeBlock key={k} code={token.text} lang={(token.lang || "").split(/\s/)[0]} highlight={highlight} />;
      case "blockquote":
        return <blockquote key={k}>{blocks(token.tokens, highlight, k)}</blockquote>;
      case "hr":
        return <hr key={k} />;
      case "list": {
        const Tag = token.ordered ? "ol" : "ul";
        return (
          <Tag key={k} start={token.ordered && token.start !== 1 ? token.start || undefined : undefined}>
            {token.items.map((item, i) => (
              <li key={i}>
                {item.task ? <input type="checkbox" checked={Boolean(item.checked)} disabled aria-label={item.checked ? "done" : "to do"} /> : null}
                {blocks(item.tokens, highlight, `${k}.${i}.`)}
              </li>
            ))}
          </Tag>
        );
      }
      case "checkbox":
        return null; // shown by its list item
      case "table":
        return (
          <div key={k} className="md-table">
            <table>
              <thead>
                <tr>
                  {token.header.map((cell, i) => (
                    <th key={i} scope="col" style={cell.align ? { textAlign: cell.align } : undefined}>
                      {inline(cell.tokens, `${k}h${i}`)}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {token.rows.map((row, r) => (
                  <tr key={r}>
                    {row.map((cell, i) => (
                      <td key={i} style={cell.align ? { textAlign: cell.align } : undefined}>
                        {inline(cell.tokens, `${k}r${r}.${i}`)}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        );
      case "text": // a tight list item's text
        return <span key={k}>{token.tokens ? inline(token.tokens, k) : decode(token.text)}</span>;
      case "html": // raw HTML is shown as the text it is
        return token.block ? (
          <p key={k} className="md-raw">
            {token.text}
          </p>
        ) : (
          token.text
        );
      default:
        return token.tokens ? <p key={k}>{inline(token.tokens, k)}</p> : <p key={k}>{token.text ?? token.raw}</p>;
    }
  });
}

/** `text` as React elements. */
export function render(text) {
  return blocks(lex(text), highlight);
}
