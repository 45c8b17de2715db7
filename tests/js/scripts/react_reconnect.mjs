// The React `useStream` page with `reconnectOnMount`: send a message, reload the page while
// the answer is still streaming, and wait for the whole answer on the reloaded page.
// Arguments (JSON in argv[2]): {api, pageDir, assistant, prompt, expected, timeoutMs}.
// Prints one JSON object: what the page showed before and after the reload, and the requests.
import { openPage } from "./browser.mjs";

const args = JSON.parse(process.argv[2]);
const timeout = args.timeoutMs ?? 20000;
const result = { ok: false };
const { browser, page, log, url } = await openPage(args.api, args.pageDir);
try {
  result.log = log;
  await page.goto(`${url}?assistant=${encodeURIComponent(args.assistant)}`);
  await page.fill("#prompt", args.prompt);
  await page.click("#send");

  const answer = page.locator("#messages li[data-type=ai]").last();
  // The first words of the answer are on the page: the run is streaming.
  await page.waitForFunction(
    () => {
      const items = document.querySelectorAll("#messages li[data-type=ai]");
      return items.length > 0 && items[items.length - 1].textContent.trim().length > 0;
    },
    null,
    { timeout },
  );
  result.beforeReload = await answer.textContent();
  result.threadId = await page.getAttribute("#status", "data-thread");
  result.storage = await page.evaluate(() => ({ ...window.sessionStorage }));
  const runId = result.storage[`lg:stream:${result.threadId}`];
  result.runStatusAtReload = runId
    ? await page.evaluate(
        async ([thread, run]) => (await (await fetch(`/threads/${thread}/runs/${run}`)).json()).status,
        [result.threadId, runId],
      )
    : null;
  result.requestsBeforeReload = log.requests.length;

  await page.reload();
  try {
    await page.waitForFunction(
      (expected) => {
        const items = document.querySelectorAll("#messages li[data-type=ai]");
        const status = document.querySelector("#status");
        return (
          items.length > 0 &&
          items[items.length - 1].textContent === expected &&
          status.dataset.loading === "false"
        );
      },
      args.expected,
      { timeout },
    );
  } catch (error) {
    result.timeout = String(error.message).split("\n")[0];
  }
  result.afterReload = (await answer.count()) ? await answer.textContent() : null;
  result.pageError = (await page.locator("#error").count())
    ? await page.textContent("#error")
    : null;
  result.storageAfter = await page.evaluate(() => ({ ...window.sessionStorage }));
  result.ok = result.afterReload === args.expected;
} catch (error) {
  result.error = String(error.stack || error);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
