// The part of Markdown that is loaded when a message first needs it (its own chunk, off the
// console's first load): marked's lexer (tokens only: the console renders them as React
// elements, never as HTML) and sugar-high's tokenizer for code blocks.
import { Lexer } from "marked";
import { SugarHigh, tokenize } from "sugar-high/core";
import * as go from "sugar-high/lang/go";
import * as javascript from "sugar-high/lang/javascript";
import * as json from "sugar-high/lang/json";
import * as python from "sugar-high/lang/python";
import * as rust from "sugar-high/lang/rust";
import * as shell from "sugar-high/lang/shell";
import * as sql from "sugar-high/lang/sql";
import * as toml from "sugar-high/lang/toml";
import * as yaml from "sugar-high/lang/yaml";

/** Markdown `text` as marked's block tokens (GitHub flavoured). */
export function lex(text) {
  return Lexer.lex(text, { gfm: true });
}

const plain = { jsx: false, regex: false, templateStrings: false };
const LANGUAGES = {
  go,
  js: javascript,
  javascript,
  jsx: javascript,
  ts: javascript,
  tsx: javascript,
  typescript: javascript,
  json: { ...json, ...plain },
  py: { ...python, ...plain },
  python: { ...python, ...plain },
  rust: { ...rust, ...plain },
  rs: { ...rust, ...plain },
  sh: { ...shell, ...plain },
  bash: { ...shell, ...plain },
  shell: { ...shell, ...plain },
  console: { ...shell, ...plain },
  sql: { ...sql, ...plain },
  toml: { ...toml, ...plain },
  yaml: { ...yaml, ...plain },
  yml: { ...yaml, ...plain },
};

/** `code` in `[kind, text]` pieces (kind: keyword, string, comment…), or null for a language
 * the console does not highlight. */
export function highlight(code, lang) {
  const options = LANGUAGES[(lang || "").toLowerCase()];
  if (!options) return null;
  return tokenize(code, options).map(([type, text]) => [SugarHigh.TokenTypes[type], text]);
}
