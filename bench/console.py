"""The web console's speed on loopback, as a browser sees it: `agentctl dev` on a small
project answered by the scripted model, and headless Chromium (the system's) loading /ui/.

Per load: first contentful paint, DOMContentLoaded, and "ready" (the navigation rendered,
GET /info answered); cold loads use a new browser context each (nothing cached), warm ones
reload the same page (ETag revalidation). Then the chat: from Send to the first token shown
and to the whole answer, for a streamed reply. It also prints what the page downloads.

    python bench/console.py [--loads 20] [--chats 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from playwright.async_api import Browser, Page, async_playwright, expect

sys.path.insert(0, str(Path(__file__).parent))
from common import QUIET_ENV, child, tail

from agentctl.testing import ScriptedModelServer

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
LENGTH = "content-length"
ANSWER = "one two three four five six seven eight nine ten"


async def timings(page: Page) -> dict[str, float]:
    return dict(
        await page.evaluate(
            """() => {
              const nav = performance.getEntriesByType("navigation")[0];
              const paint = performance.getEntriesByName("first-contentful-paint")[0];
              return {fcp: paint ? paint.startTime : NaN, dcl: nav.domContentLoadedEventEnd};
            }"""
        )
    )


async def load(page: Page, url: str, *, reload: bool) -> dict[str, float]:
    start = time.perf_counter()
    if reload:
        await page.reload()
    else:
        await page.goto(f"{url}/ui/")
    await page.get_by_role("navigation", name="Console").wait_for()
    ready = (time.perf_counter() - start) * 1000
    return {**await timings(page), "ready": ready}


async def chat(page: Page) -> tuple[float, float]:
    await page.get_by_label("Message").fill(f"@slow 0.02 @say {ANSWER}")
    answers = page.locator(".message.ai")
    before = await answers.count()
    start = time.perf_counter()
    await page.get_by_role("button", name="Send").click()
    await answers.nth(before).wait_for()
    first = (time.perf_counter() - start) * 1000
    await expect(answers.nth(before)).to_have_text(ANSWER)
    return first, (time.perf_counter() - start) * 1000


def summary(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return f"{name:<28} p50 {statistics.median(values):7.1f} ms   p95 {p95:7.1f} ms"


async def measure(url: str, browser: Browser, loads: int, chats: int) -> None:
    cold: dict[str, list[float]] = {"fcp": [], "dcl": [], "ready": []}
    sizes: dict[str, int] = {}
    for index in range(loads):
        context = await browser.new_context()
        page = await context.new_page()
        if index == 0:
            page.on("response", lambda r: sizes.update({r.url: int(r.headers.get(LENGTH, 0))}))
        for key, value in (await load(page, url, reload=False)).items():
            cold[key].append(value)
        await context.close()
    context = await browser.new_context()
    page = await context.new_page()
    await load(page, url, reload=False)
    warm: dict[str, list[float]] = {"fcp": [], "dcl": [], "ready": []}
    for _ in range(loads):
        for key, value in (await load(page, url, reload=True)).items():
            warm[key].append(value)
    firsts, wholes = [], []
    for _ in range(chats):
        first, whole = await chat(page)
        firsts.append(first)
        wholes.append(whole)
    await context.close()

    console_bytes = {
        url.rsplit("/", 1)[-1] or "index.html": size for url, size in sizes.items() if "/ui/" in url
    }
    print(f"downloaded on a cold load (gzip): {console_bytes}, {sum(console_bytes.values())} bytes")
    for label, figures in (("cold", cold), ("warm", warm)):
        print(summary(f"{label} first contentful paint", figures["fcp"]))
        print(summary(f"{label} DOMContentLoaded", figures["dcl"]))
        print(summary(f"{label} ready (nav + /info)", figures["ready"]))
    print(summary("chat: send → first token", firsts))
    print(summary(f"chat: send → {len(ANSWER.split())} tokens", wholes))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--chats", type=int, default=10)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as model:
        project = Path(tmp) / "console-bench"
        project.mkdir()
        (project / "agent.toml").write_text('[agent]\nname = "bench"\nmodel = "openai:scripted"\n')
        (project / "AGENTS.md").write_text("You chat.\n")
        env = {**os.environ, **QUIET_ENV, **model.env}
        log = Path(tmp) / "dev.log"
        command = [sys.executable, "-m", "agentctl", "dev", "--config", str(project / "agent.toml"),
                   "--port", "0"]  # fmt: skip
        with child(command, log, env=env):
            url = await ready_url(log)
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                print(f"agentctl dev at {url}, Chromium {browser.version}")
                await measure(url, browser, options.loads, options.chats)
                await browser.close()


async def ready_url(log: Path) -> str:
    for _ in range(600):
        found = re.search(r"^  API   (http://\S+)$", log.read_text(errors="replace"), re.M)
        if found:
            return found.group(1)
        await asyncio.sleep(0.1)
    raise SystemExit(f"agentctl dev did not start:\n{tail(log)}")


if __name__ == "__main__":
    asyncio.run(main())
