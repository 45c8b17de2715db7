"""Signing in through the agent's OpenID Connect provider from the console: the
authorization code flow with PKCE against a real provider on a loopback port, then chatting
as that user."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from playwright.async_api import expect

from agentctl.testing.identity import OidcIssuer
from tests.conftest import chat_project
from tests.console.conftest import DevUrl, OpenConsole
from tests.server.conftest import console_auth, sdk, with_auth

CLIENT_ID = "agentctl-console"


def oidc_project(root: Path, oidc: OidcIssuer) -> Path:
    return with_auth(chat_project(root / "source"), root / "chat", console_auth(oidc, CLIENT_ID))


async def test_a_user_signs_in_through_the_provider_and_chats_as_themselves(
    open_console: OpenConsole, dev_url: DevUrl, oidc: OidcIssuer, tmp_path: Path
) -> None:
    url = dev_url(oidc_project(tmp_path / "chat", oidc))
    oidc.register(CLIENT_ID, f"{url}/ui/")
    async with open_console(url) as console:
        page = console.page
        await console.open("threads")
        await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        provider_host = urlsplit(oidc.issuer).netloc
        await page.get_by_role("button", name=f"Sign in with {provider_host}").click()

        # The provider's own page: the user signs in there, and is sent back.
        await page.get_by_label("User name").fill("carol")
        await console.screenshot("oidc-provider")
        await page.get_by_role("button", name="Sign in to the provider").click()
        await expect(console.page.get_by_test_id("signed-in-as")).to_be_visible()
        assert page.url == f"{url}/ui/#/threads"  # the code is gone, the view is kept
        await expect(page.get_by_role("link", name="Threads")).to_have_attribute(
            "aria-current", "page"
        )

        await console.go("Chat")
        await console.send("@say hello carol")
        await expect(page.locator(".message.ai")).to_have_text(["hello carol"])
        await console.wait_idle()
        thread_id = await console.thread_id()

    carol, dave = sdk(url, token=oidc.mint("carol")), sdk(url, token=oidc.mint("dave"))
    try:
        assert [t["thread_id"] for t in await carol.threads.search()] == [thread_id]
        assert await dave.threads.search() == []
    finally:
        await carol.aclose()
        await dave.aclose()


async def test_a_sign_in_answer_not_started_here_is_refused_plainly(
    open_console: OpenConsole, dev_url: DevUrl, oidc: OidcIssuer, tmp_path: Path
) -> None:
    url = dev_url(oidc_project(tmp_path / "chat", oidc))
    async with open_console(url) as console:
        await console.page.goto(f"{url}/ui/?code=stolen&state=forged#/chat")
        await expect(console.page.get_by_role("alert")).to_contain_text(
            "does not belong to a sign-in started here"
        )
        await expect(console.page.get_by_test_id("signed-in-as")).to_have_count(0)
        assert console.page.url == f"{url}/ui/#/chat"


async def test_an_error_answer_not_started_here_does_not_show_what_it_says(
    open_console: OpenConsole, dev_url: DevUrl, oidc: OidcIssuer, tmp_path: Path
) -> None:
    url = dev_url(oidc_project(tmp_path / "chat", oidc))
    async with open_console(url) as console:
        forged = "error=access_denied&error_description=Call+0800+to+unlock&state=forged"
        await console.page.goto(f"{url}/ui/?{forged}#/chat")
        alert = console.page.get_by_role("alert")
        await expect(alert).to_contain_text("does not belong to a sign-in started here")
        assert "0800" not in await alert.inner_text()
