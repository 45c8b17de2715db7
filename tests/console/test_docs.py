"""The API reference at /docs in headless Chromium: Swagger UI renders the server's API from
files the server serves itself, under its content security policy, and calls the server
("Try it out") — with no request to any other origin and no policy violation."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, ConsoleMessage, Request, expect

from tests.conftest import chat_project
from tests.console.conftest import SCREENSHOTS, TIMEOUT_MS, DevUrl


async def test_the_api_reference_renders_from_the_server_alone(
    browser: Browser, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    context = await browser.new_context(viewport={"width": 1200, "height": 900})
    page = await context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    problems: list[str] = []
    elsewhere: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"pageerror: {error}"))

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":  # a blocked file or connection is reported here
            problems.append(f"console: {message.text}")

    def on_request(request: Request) -> None:
        if not request.url.startswith((f"{url}/", "data:")):
            elsewhere.append(request.url)

    page.on("console", on_console)
    page.on("request", on_request)
    try:
        await page.goto(f"{url}/docs")
        await expect(page.get_by_role("heading", name="agentctl agent server")).to_be_visible()
        search = page.locator("#operations-threads-search_threads_threads_search_post")
        await expect(search).to_contain_text("/threads/search")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(SCREENSHOTS / "docs.png"))
        # Try it out: the page calls the server (a POST: its origin is checked, and passes).
        await search.locator(".opblock-summary").click()
        await search.get_by_role("button", name="Try it out").click()
        await search.locator("textarea.body-param__text").fill('{"limit": 5}')
        await search.get_by_role("button", name="Execute").click()
        status = search.locator(".live-responses-table .response .response-col_status")
        await expect(status).to_have_text("200")
    finally:
        await context.close()
    assert elsewhere == []
    assert problems == []
