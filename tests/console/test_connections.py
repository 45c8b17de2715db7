"""Per-user connections in the console, against a real OAuth provider (the loopback one of
agentctl.testing) and its notes MCP server: a run that needs the user's account shows a
Connect card; the provider's sign-in page opens in a new tab, and once the user signed in
there the answer arrives in the chat by itself. The Connections view lists the user's
servers, connects and revokes; the operator sees only how many users connected. The link a
consent request carries (for SDK clients, A2A, MCP) opens the console's page for it, where
only the request's own signed-in user can go on to the provider."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Locator, Page, expect

from agentctl.testing.identity import IdpBServer
from agentctl.testing.oauth_provider import OAuthProvider, running_oauth_provider
from tests.conftest import chat_project
from tests.console.conftest import Console, DevUrl, OpenConsole
from tests.server.conftest import ALICE, BOB, sdk, user, with_auth

DESCRIPTION = "Your notes in Example Notes"
# Connect (the run waits for the user), then the tool the connection offers, then the answer.
SCRIPT = "@call connect_notes {}\n@call whoami {}\n@say You are {last_tool_result} at notes."
ANSWER = "You are alice at notes."


@pytest.fixture
async def provider() -> AsyncIterator[OAuthProvider]:
    async with running_oauth_provider() as running:
        yield running


def notes_project(root: Path, provider: OAuthProvider) -> Path:
    """The chat project with the provider's notes server, user-owned (`oauth`)."""
    chat_project(root)
    notes = {
        "url": provider.mcp_url,
        "description": DESCRIPTION,
        "oauth": {"scopes": ["notes.read"]},
    }
    (root / "mcp.json").write_text(json.dumps({"mcpServers": {"notes": notes}}))
    return root


def signed_in_project(tmp_path: Path, provider: OAuthProvider, idp_b: IdpBServer) -> Path:
    project = notes_project(tmp_path / "source", provider)
    return with_auth(project, tmp_path / "signed-in", {"provider": "idp_b"}, idp_b.env)


async def sign_in_at_the_provider(
    console: Console, click: Locator, provider: OAuthProvider
) -> Page:
    """Click `click`; in the tab it opens, sign in to the provider as alice; the tab once the
    agent's callback answered."""
    async with console.context.expect_page() as opened:
        await click.click()
    tab = await opened.value
    await tab.wait_for_url(f"{provider.issuer}/**")
    # The provider's page gets no handle on the console.
    assert await tab.evaluate("window.opener === null")
    await tab.get_by_label("User name").fill("alice")
    await tab.get_by_label("Password").fill("alice-password")
    await tab.get_by_role("button", name="Sign in").click()
    await tab.wait_for_url(f"{console.url}/connections/callback?**")
    await expect(tab.get_by_role("heading", name="Connected notes")).to_be_visible()
    return tab


async def connections_of(url: str, token: str) -> Any:
    async with httpx.AsyncClient(base_url=url) as http:
        answer = await http.get("/connections", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    return answer.json()


async def test_a_user_connects_from_the_chat_and_the_answer_arrives_by_itself(
    open_console: OpenConsole,
    dev_url: DevUrl,
    tmp_path: Path,
    idp_b: IdpBServer,
    provider: OAuthProvider,
) -> None:
    url = dev_url(signed_in_project(tmp_path, provider, idp_b))
    token = idp_b.mint(ALICE, expires_in=3600)
    async with open_console(url) as console:
        page = console.page
        await console.open()
        await console.sign_in(token)
        await console.send(SCRIPT)
        card = page.get_by_role("region", name="Connect notes")
        await expect(card).to_contain_text(DESCRIPTION)
        await console.wait_idle()
        await expect(page.get_by_test_id("status")).to_have_text(
            "Waiting for you to connect notes."
        )
        await expect(page.get_by_role("button", name="Tool connect_notes")).to_contain_text(
            "waiting for a connection"
        )
        await console.screenshot("connect")

        tab = await sign_in_at_the_provider(
            console, card.get_by_role("button", name="Connect notes"), provider
        )
        await expect(tab.locator("body")).to_contain_text("goes on by itself")
        await tab.close()

        # Back in the console: the run the callback resumed is followed, its answer shown.
        await page.bring_to_front()
        await expect(page.locator(".message.ai").last).to_have_text(ANSWER)
        await console.wait_idle()
        await expect(card).to_have_count(0)
        await page.get_by_role("button", name="Tool whoami").click()
        await expect(page.get_by_test_id("tool-call").last).to_contain_text("alice")
        await console.screenshot("connected")

        # The Connections view: connected, with its scopes; Revoke asks first.
        await console.go("Connections")
        row = page.get_by_test_id("connections").locator("tr[data-server=notes]")
        await expect(row.get_by_test_id("connection-state")).to_have_text("Connected")
        await expect(row).to_contain_text(DESCRIPTION)
        await expect(row).to_contain_text("notes.read")
        await console.screenshot("connections")
        await row.get_by_role("button", name="Revoke notes").click()
        question = page.get_by_role("group", name="Revoke notes?")
        await expect(question.get_by_role("button", name="Cancel")).to_be_focused()
        await question.get_by_role("button", name="Revoke").click()
        await expect(row.get_by_test_id("connection-state")).to_have_text("Not connected")
        await expect(page.get_by_test_id("connections-notice")).to_have_text(
            "Your connection to notes was revoked."
        )
        listed = await connections_of(url, token)
        assert [(c["server"], c["connected"]) for c in listed["connections"]] == [("notes", False)]

        # Connect again from the view: once signed in, the row says so by itself.
        tab = await sign_in_at_the_provider(
            console, row.get_by_role("button", name="Connect notes"), provider
        )
        await tab.close()
        await page.bring_to_front()
        await expect(row.get_by_test_id("connection-state")).to_have_text("Connected")
        listed = await connections_of(url, token)
        assert [(c["server"], c["connected"]) for c in listed["connections"]] == [("notes", True)]


async def test_a_tab_closed_before_signing_in_is_asked_again(
    open_console: OpenConsole,
    dev_url: DevUrl,
    tmp_path: Path,
    idp_b: IdpBServer,
    provider: OAuthProvider,
) -> None:
    url = dev_url(signed_in_project(tmp_path, provider, idp_b))
    token = idp_b.mint(ALICE, expires_in=3600)
    async with open_console(url) as console:
        page = console.page
        await console.open()
        await console.sign_in(token)
        await console.send(SCRIPT)
        card = page.get_by_role("region", name="Connect notes")
        await console.wait_idle()
        async with console.context.expect_page() as opened:
            await card.get_by_role("button", name="Connect notes").click()
        tab = await opened.value
        await tab.wait_for_url(f"{provider.issuer}/**")
        await tab.close()  # the user changed their mind, then comes back
        await expect(card.get_by_test_id("connect-waiting")).to_contain_text("Waiting for you")
        await expect(card.get_by_role("button", name="Ask again")).to_be_visible()

        # After a reload the card is there still; its request went to the provider once
        # already, so the server refuses it again, and the card says so.
        await page.reload()
        await card.get_by_role("button", name="Connect notes").click()
        await expect(card.get_by_test_id("connect-expired")).to_contain_text(
            "can no longer be used (it was used already, or expired)"
        )
        await console.screenshot("connect-again")

        # Asking again opens a new request; once connected, the console resumes the run.
        tab = await sign_in_at_the_provider(
            console, card.get_by_role("button", name="Ask again"), provider
        )
        await tab.close()
        await page.bring_to_front()
        await expect(page.locator(".message.ai").last).to_have_text(ANSWER)
        await console.wait_idle()
        await expect(card).to_have_count(0)


async def test_the_operator_sees_how_many_users_connected(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path, provider: OAuthProvider
) -> None:
    # `agentctl dev` without [auth]: the visitor is the operator, and no user is signed in.
    url = dev_url(notes_project(tmp_path / "open", provider))
    async with open_console(url) as console:
        page = console.page
        await console.open("connections")
        table = page.get_by_test_id("connection-counts")
        row = table.locator("tr[data-server=notes]")
        await expect(row).to_contain_text(DESCRIPTION)
        await expect(row.get_by_test_id("users")).to_have_text("0")
        await expect(page.get_by_role("button", name="Connect notes")).to_have_count(0)
        await console.screenshot("connections-operator")


async def test_a_consent_link_goes_on_only_for_its_own_signed_in_user(
    open_console: OpenConsole,
    dev_url: DevUrl,
    tmp_path: Path,
    idp_b: IdpBServer,
    provider: OAuthProvider,
) -> None:
    url = dev_url(signed_in_project(tmp_path, provider, idp_b))
    alice, bob = idp_b.mint(ALICE, expires_in=3600), idp_b.mint(BOB, expires_in=3600)
    # A run of alice's through the SDK, not the console: its interrupt carries the link.
    client = sdk(url, token=alice)
    thread_id = (await client.threads.create())["thread_id"]
    waiting: Any = await client.runs.wait(thread_id, "chat", input=user(SCRIPT))
    asked = waiting["__interrupt__"][0]["value"]
    link = asked["authorization_url"]
    assert link == f"{url}/ui/#/connect/{asked['flow_id']}"

    # Bob opens it in his browser and signs in as himself: refused, nothing connected.
    async with open_console(url) as console:
        page = console.page
        await page.goto(link)
        await expect(page.get_by_test_id("signin-needed")).to_contain_text(
            "Sign in as the user who asked the agent"
        )
        await console.sign_in(bob)
        await expect(page.get_by_test_id("connect-not-yours")).to_contain_text(
            "not yours: it belongs to another user"
        )
        await expect(page.get_by_role("button", name="Continue")).to_have_count(0)
        await console.screenshot("connect-not-yours")
    for token in (alice, bob):
        listed = await connections_of(url, token)
        assert [c["connected"] for c in listed["connections"]] == [False]

    # Alice opens it in a fresh browser: signs in, Continue, the provider, the callback.
    async with open_console(url) as console:
        page = console.page
        await page.goto(link)
        await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        await console.sign_in(alice)
        request = page.get_by_test_id("connect-request")
        await expect(
            request.get_by_role("heading", name=f"Connect notes for {ALICE} on chat")
        ).to_be_visible()
        await expect(request).to_contain_text(DESCRIPTION)
        await console.screenshot("connect-request")
        await request.get_by_role("button", name="Continue").click()
        await page.wait_for_url(f"{provider.issuer}/**")
        await page.get_by_label("User name").fill("alice")
        await page.get_by_label("Password").fill("alice-password")
        await page.get_by_role("button", name="Sign in").click()
        await page.wait_for_url(f"{url}/connections/callback?**")
        await expect(page.get_by_role("heading", name="Connected notes")).to_be_visible()
        await expect(page.locator("body")).to_contain_text("goes on by itself")
        # Back to the console: the run the callback resumed answered in the thread.
        await page.get_by_role("link", name="Back to the conversation").click()
        await page.wait_for_url(f"{url}/ui/#/chat/{thread_id}")
        # The chat shows the thread as it was when it opened (it does not yet follow a run
        # started elsewhere): the resumed run may still be going, so look again until it ended.
        for _ in range(40):
            if await page.locator(".message.ai", has_text=ANSWER).count():
                break
            await page.wait_for_timeout(500)
            await page.reload()
        await expect(page.locator(".message.ai").last).to_have_text(ANSWER)
        # The link again: answered already.
        await page.goto(link)
        await expect(page.get_by_test_id("connect-done")).to_contain_text("notes is connected")
    thread: Any = await client.threads.get(thread_id)
    assert thread["values"]["messages"][-1]["content"] == ANSWER
    await client.aclose()
    listed = await connections_of(url, bob)
    assert [c["connected"] for c in listed["connections"]] == [False]


async def test_a_used_consent_link_asks_again(
    open_console: OpenConsole,
    dev_url: DevUrl,
    tmp_path: Path,
    idp_b: IdpBServer,
    provider: OAuthProvider,
) -> None:
    url = dev_url(signed_in_project(tmp_path, provider, idp_b))
    alice = idp_b.mint(ALICE, expires_in=3600)
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {alice}"}
    ) as http:
        started = (await http.post("/connections/notes/authorize")).json()
        # Its provider address was given once already (a tab closed before signing in).
        assert (await http.post(f"/connections/flows/{started['flow_id']}/redirect")).is_success
    async with open_console(url) as console:
        page = console.page
        await page.goto(started["authorization_url"])
        await console.sign_in(alice)
        await expect(page.get_by_test_id("connect-stale")).to_contain_text("was used already")
        await page.get_by_role("button", name="Ask again").click()
        await page.wait_for_url(f"{provider.issuer}/**")
        await page.get_by_label("User name").fill("alice")
        await page.get_by_label("Password").fill("alice-password")
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("heading", name="Connected notes")).to_be_visible()
    listed = await connections_of(url, alice)
    assert [c["connected"] for c in listed["connections"]] == [True]
