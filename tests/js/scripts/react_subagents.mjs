// The React `useStream` page as a deep agent's app (`?subagents=1`: `filterSubagentMessages`,
// runs stream subgraphs, a card per subagent): send a message that delegates to a subagent,
// read the conversation and the cards once the run ends, then reload the page and read them
// again, as the hook rebuilds them from the thread's history.
// Arguments (JSON in argv[2]): {api, pageDir, assistant, prompt, expected, timeoutMs}.
// Prints one JSON object: what the page showed before and after the reload, and the requests.
import { openPage } from "./browser.mjs";

const args = JSON.parse(process.argv[2]);
const timeout = args.timeoutMs ?? 20000;
const result = { ok: false };

/** The conversation and the subagent cards as the page shows them. */
async function shown(page) {
  return await page.evaluate(() => ({
    messages: [...document.querySelectorAll("#messages li")].map((li) => ({
      type: li.dataset.type,
      text: li.textContent,
    })),
    subagents: [...document.querySelectorAll("#subagents li")].map((li) => ({
      call: li.dataset.call,
      type: li.dataset.type,
      task: li.dataset.task,
      status: li.dataset.status,
      text: li.textContent,
    })),
  }));
}

/** Wait until the run is over, the last message is `expected` and every card has its text. */
async function settled(page) {
  await page.waitForFunction(
    (expected) => {
      const items = document.querySelectorAll("#messages li[data-type=ai]");
      const cards = [...document.querySelectorAll("#subagents li")];
      return (
        document.querySelector("#status").dataset.loading === "false" &&
        items.length > 0 &&
        items[items.length - 1].textContent === expected &&
        cards.length > 0 &&
        cards.every((card) => card.dataset.status === "complete" && card.textContent.length > 0)
      );
    },
    args.expected,
    { timeout },
  );
}

const { browser, page, log, url } = await openPage(args.api, args.pageDir);
try {
  result.log = log;
  await page.goto(`${url}?subagents=1&assistant=${encodeURIComponent(args.assistant)}`);
  await page.fill("#prompt", args.prompt);
  await page.click("#send");
  try {
    await settled(page);
  } catch (error) {
    result.timeoutLive = String(error.message).split("\n")[0];
  }
  result.live = await shown(page);
  result.threadId = await page.getAttribute("#status", "data-thread");
  result.requestsBeforeReload = log.requests.length;

  await page.reload();
  try {
    await settled(page);
  } catch (error) {
    result.timeoutReloaded = String(error.message).split("\n")[0];
  }
  result.reloaded = await shown(page);
  result.pageError = (await page.locator("#error").count()) ? await page.textContent("#error") : null;
  result.ok = true;
} catch (error) {
  result.error = String(error.stack || error);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
