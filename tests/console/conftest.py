"""The web console (/ui/) in headless Chromium, driven by Playwright (the Python package,
with the system's Chromium: no browser download), against a real `agentctl dev` — or `serve`
replicas — answering through the scripted model.

Screenshots the tests take go to $AGENTCTL_SCREENSHOTS (default build/screenshots/); `make
screenshots` writes them into docs/images/, where docs/console.md shows them."""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import Browser, BrowserContext, Page, async_playwright, expect

from tests.conftest import chat_project
from tests.dev_process import StartDev
from tests.production.conftest import cluster  # noqa: F401 (`agentctl serve` replicas, a fixture)

ROOT = Path(__file__).parents[2]
SCREENSHOTS = Path(os.environ.get("AGENTCTL_SCREENSHOTS") or ROOT / "build" / "screenshots")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMEOUT_MS = 20_000


@pytest.fixture
async def browser(chromium: str) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


class Console:
    """One visitor's console in its own browser context (its own sessionStorage): what a
    person does, and what they see. Page errors are collected and fail `check_clean`."""

    def __init__(self, context: BrowserContext, page: Page, url: str) -> None:
        self.context = context
        self.page = page
        self.url = url
        self.errors: list[str] = []
        page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))
        page.set_default_timeout(TIMEOUT_MS)
        expect.set_options(timeout=TIMEOUT_MS)

    async def open(self, route: str = "") -> None:
        await self.page.goto(f"{self.url}/ui/{'#/' + route if route else ''}")
        await expect(self.page.get_by_role("navigation", name="Console")).to_be_visible()

    async def go(self, view: str) -> None:
        await (
            self.page.get_by_role("navigation", name="Console")
            .get_by_role("link", name=view)
            .click()
        )

    async def sign_in(self, secret: str, kind: str | None = None) -> None:
        page = self.page
        await page.get_by_role("button", name="Sign in").click()
        form = page.get_by_role("form", name="Sign in")
        if kind is not None:
            await form.get_by_label("With").select_option(label=kind)
        await form.locator("input[name=credential]").fill(secret)
        await form.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_test_id("signed-in-as")).to_be_visible()

    async def send(self, text: str) -> None:
        await self.page.get_by_label("Message").fill(text)
        await self.page.get_by_role("button", name="Send").click()

    async def wait_idle(self) -> None:
        await expect(self.page.get_by_test_id("status")).to_have_attribute("data-loading", "false")

    async def thread_id(self) -> str:
        match = re.search(r"#/chat/([0-9a-f-]{36})", self.page.url)
        assert match, f"no thread in the address: {self.page.url}"
        return match.group(1)

    async def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"console-{name}.png"
        await self.page.screenshot(path=str(path))
        return path

    def check_clean(self) -> None:
        assert self.errors == [], self.errors


OpenConsole = Callable[[str], AbstractAsyncContextManager[Console]]
DevUrl = Callable[..., str]


@pytest.fixture
def open_console(browser: Browser) -> OpenConsole:
    """`async with open_console(url) as console`: a new visitor (browser context) on the
    console of the server at `url`."""

    @asynccontextmanager
    async def visitor(url: str) -> AsyncIterator[Console]:
        context = await browser.new_context(viewport={"width": 1200, "height": 760})
        try:
            console = Console(context, await context.new_page(), url)
            yield console
            console.check_clean()
        finally:
            await context.close()

    return visitor


@pytest.fixture
def dev_url(start_dev: StartDev) -> DevUrl:
    """`agentctl dev` on the project at `root` (a free port); its URL once it serves."""

    def start(root: Path, *args: str) -> str:
        return start_dev("--config", root / "agent.toml", "--port", "0", *args).ready()

    return start


TEMPLATE = "# About the user\n"
SKILL = "---\nname: review\ndescription: Reviews drafts\n---\n# Review\nRead it twice.\n"


def memory_project(root: Path) -> Path:
    """The chat project with a user memory template, a skill and a subagent."""
    chat_project(root)
    for path, text in {
        "user/AGENTS.md": TEMPLATE,
        "skills/review/SKILL.md": SKILL,
        "subagents/writer/agent.toml": '[agent]\nname = "writer"\ndescription = "Writes prose"\n',
        "subagents/writer/AGENTS.md": "You write.\n",
    }.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def write_call(path: str, content: str) -> str:
    return "@call write_file " + json.dumps({"file_path": path, "content": content})


async def expect_file_shown(page: Page, path: str, content: str) -> None:
    """The Files panel lists `path`; opened, it shows `content`."""
    files = page.get_by_role("region", name="Files")
    await files.get_by_role("button", name=path).click()
    await expect(files.get_by_label(f"Content of {path}")).to_have_text(content)
