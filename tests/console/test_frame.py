"""The console's frame: a user whose token the server stops taking is asked to sign in
again; an error answer that is not the API's JSON (a proxy's page) is told plainly; moving
to another view moves the focus to its heading."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from playwright.async_api import Route, expect

from agentctl.testing.identity import IdpBServer
from tests.conftest import chat_project
from tests.console.conftest import DevUrl, OpenConsole
from tests.server.conftest import ALICE, with_auth

LEEWAY = 5  # seconds the server still takes a token after it expired (DEFAULT_LEEWAY)


async def test_an_expired_token_ends_the_session_and_asks_to_sign_in_again(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path, idp_b: IdpBServer
) -> None:
    project = with_auth(
        chat_project(tmp_path / "plain"), tmp_path / "auth", {"provider": "idp_b"}, idp_b.env
    )
    url = dev_url(project)
    # Taken for two seconds, and for the leeway after: the sign-in has seven seconds.
    minted = time.monotonic()
    token = idp_b.mint(ALICE, expires_in=2)
    async with open_console(url) as console:
        page = console.page
        await console.open("chat")
        await console.sign_in(token)
        await asyncio.sleep(max(0.0, minted + 2 + LEEWAY + 1 - time.monotonic()))
        await console.go("Threads")
        await expect(page.get_by_test_id("session-ended")).to_have_text(
            "Your session ended (401): sign in again."
        )
        await expect(page.get_by_test_id("signed-in-as")).to_have_count(0)
        await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        assert await page.evaluate("sessionStorage.getItem('agentctl:credentials')") is None
        await console.screenshot("session-ended")


async def test_an_error_page_that_is_not_json_is_told_by_its_status(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))

    async def proxy_down(route: Route) -> None:
        await route.fulfill(status=502, content_type="text/html", body="<html>Bad gateway</html>")

    async with open_console(url) as console:
        page = console.page
        await page.route("**/info", proxy_down)
        await page.goto(f"{url}/ui/")
        alert = page.get_by_role("alert")
        await expect(alert).to_contain_text("The server did not answer GET /info")
        await expect(alert).to_contain_text("(502)")
        assert "JSON" not in await alert.inner_text()


async def test_moving_to_another_view_focuses_its_heading(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with open_console(url) as console:
        page = console.page
        await console.open()
        await console.go("Threads")
        await expect(page.get_by_role("heading", name="Threads", level=1)).to_be_focused()
        await console.go("Memory")
        await expect(page.get_by_role("heading", name="Memory", level=1)).to_be_focused()
