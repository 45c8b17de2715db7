// Headless Chromium (the Debian package: no browser download) through playwright-core, and a
// page of our own served on the API's origin by request interception: the browser sees one
// origin, so no CORS is involved, and every API request still reaches the real server.
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { chromium } from "playwright-core";

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css" };

export async function launch() {
  return await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: CHROMIUM_ARGS,
  });
}

/** Serve the files of `dir` at `${origin}${prefix}` in `context`; other requests go through. */
export async function servePage(context, origin, dir, prefix = "/__page/") {
  await context.route(`${origin}${prefix}**`, async (route) => {
    const path = new URL(route.request().url()).pathname.slice(prefix.length) || "index.html";
    const file = normalize(join(dir, path));
    if (!file.startsWith(dir)) return route.fulfill({ status: 403 });
    try {
      const body = await readFile(file);
      await route.fulfill({ status: 200, body, contentType: TYPES[extname(file)] });
    } catch {
      await route.fulfill({ status: 404, body: "not found" });
    }
  });
  return `${origin}${prefix}index.html`;
}

/** Every API request and response of `page`, and the page's errors, for the report. */
export function record(page, origin) {
  const log = { requests: [], errors: [] };
  page.on("request", (request) => {
    if (!request.url().startsWith(origin) || request.url().includes("/__page/")) return;
    const headers = request.headers();
    log.requests.push({
      method: request.method(),
      path: request.url().slice(origin.length),
      lastEventId: headers["last-event-id"],
    });
  });
  page.on("response", (response) => {
    const entry = log.requests.findLast(
      (r) => r.status === undefined && response.url() === origin + r.path,
    );
    if (entry) entry.status = response.status();
  });
  page.on("pageerror", (error) => log.errors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") log.errors.push(`console: ${message.text()}`);
  });
  page.on("requestfailed", (request) => {
    const failure = request.failure()?.errorText;
    if (failure !== "net::ERR_ABORTED") log.errors.push(`failed: ${request.url()} ${failure}`);
  });
  return log;
}

/** Chromium with a page on the API's origin that serves `pageDir`, its requests recorded:
 * `{browser, page, log, url}` (the page is not loaded yet: `page.goto(url + "?…")`). */
export async function openPage(api, pageDir) {
  const browser = await launch();
  try {
    const context = await browser.newContext();
    const url = await servePage(context, api, pageDir);
    const page = await context.newPage();
    return { browser, page, log: record(page, api), url };
  } catch (error) {
    await browser.close();
    throw error;
  }
}
