// Bundle page/ into OUT_DIR (argv[2]): index.html and app.js, one self-contained script.
import { copyFile, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = process.argv[2];
if (!out) throw new Error("usage: node build_page.mjs OUT_DIR");
await mkdir(out, { recursive: true });
await build({
  entryPoints: [join(root, "page", "app.jsx")],
  outfile: join(out, "app.js"),
  bundle: true,
  format: "iife",
  jsx: "automatic",
  platform: "browser",
  target: "chrome120",
  define: { "process.env.NODE_ENV": '"production"' },
  minify: true,
  logLevel: "warning",
});
await copyFile(join(root, "page", "index.html"), join(out, "index.html"));
console.log(JSON.stringify({ out }));
