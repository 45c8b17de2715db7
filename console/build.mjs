// Build the console (src/ and static/) into the Python package, src/agentctl/server/console/,
// where `agentctl dev` and `serve` serve it at /ui/ (agentctl needs no Node to run).
// `node build.mjs --check`: build into a temporary folder and fail when the committed files
// differ from what the sources give (CI runs it: the shipped console is always the source's).
import { copyFile, mkdtemp, mkdir, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const PACKAGE_DIR = join(here, "..", "src", "agentctl", "server", "console");
const STATIC = ["index.html", "favicon.svg"];

// The SDK's `@langchain/core/messages` is the package's index, which also loads LangSmith's
// tracing client (through the message transformers' runnables): a third of the bundle that
// never runs in a browser. src/vendor/core-messages.js exports what the SDK takes from it.
const slimCore = {
  name: "slim-langchain-core",
  setup(build) {
    build.onResolve({ filter: /^@langchain\/core\/messages$/ }, () => ({
      path: join(here, "src", "vendor", "core-messages.js"),
    }));
    build.onResolve({ filter: /^@langchain\/core\/dist\// }, (args) => ({
      path: join(here, "node_modules", args.path),
    }));
  },
};

// React's API on Preact (preact/compat): the same components and hooks (the SDK's useStream
// included) in a sixth of the size of react-dom.
const PREACT = {
  react: "preact/compat",
  "react-dom": "preact/compat",
  "react-dom/client": "preact/compat/client",
  "react/jsx-runtime": "preact/jsx-runtime",
};

async function buildInto(out) {
  await mkdir(out, { recursive: true });
  // Chunks loaded on demand (`import()`), named by their content: an old build's go first.
  for (const name of await readdir(out)) if (name.startsWith("chunk-")) await rm(join(out, name));
  await build({
    entryPoints: { console: join(here, "src", "main.jsx") },
    outdir: out,
    absWorkingDir: here, // chunk names hash paths relative to it: the same from any folder
    bundle: true,
    format: "esm",
    splitting: true,
    chunkNames: "chunk-[hash]",
    jsx: "automatic",
    platform: "browser",
    target: ["chrome115", "firefox115", "safari16"],
    define: { "process.env.NODE_ENV": '"production"' },
    minify: true,
    legalComments: "none",
    loader: { ".css": "css" },
    logLevel: "warning",
    plugins: [slimCore],
    alias: PREACT,
    absWorkingDir: here, // where the aliases resolve, whatever the caller's folder
  });
  for (const name of STATIC) await copyFile(join(here, "static", name), join(out, name));
}

async function same(a, b) {
  const names = (await readdir(a)).filter((n) => n !== "__init__.py").sort();
  const other = (await readdir(b)).filter((n) => n !== "__init__.py").sort();
  if (names.join() !== other.join()) return `files differ: ${names} vs ${other}`;
  for (const name of names) {
    const [x, y] = [await readFile(join(a, name)), await readFile(join(b, name))];
    if (!x.equals(y)) return `${name} differs`;
  }
  return null;
}

if (process.argv.includes("--check")) {
  const out = await mkdtemp(join(tmpdir(), "console-"));
  try {
    await buildInto(out);
    const difference = await same(out, PACKAGE_DIR);
    if (difference) {
      console.error(`the built console in ${PACKAGE_DIR} is not the sources' (${difference}): run make console and commit it`);
      process.exit(1);
    }
  } finally {
    await rm(out, { recursive: true, force: true });
  }
} else {
  await buildInto(PACKAGE_DIR);
  console.log(`built the console into ${PACKAGE_DIR}`);
}
