"""Sign-in said for the server the console is on: `agentctl dev` without `[auth]` asks for
none; `agentctl dev` with `[auth]` asks for the user's token or the provider's sign-in and
never speaks of a deployment key (dev has none); on `agentctl serve`, an agent with `[auth]`
offers its users' sign-in and the operator's key, an agent without `[auth]` is its
operator's (the deployment key) and says so. The platform's root is in test_overview.py."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.async_api import Page, expect

from agentctl.testing.identity import IdpBServer, OidcIssuer
from tests.conftest import chat_project
from tests.console.conftest import DevUrl, OpenConsole
from tests.production.conftest import KEY, Cluster, agent_project, agent_serving
from tests.server.conftest import ALICE, console_auth, with_auth


async def no_key_wording(page: Page) -> None:
    await expect(page.locator("body")).not_to_contain_text("deployment key")


async def test_dev_asks_for_no_deployment_key(
    open_console: OpenConsole,
    dev_url: DevUrl,
    idp_b: IdpBServer,
    oidc: OidcIssuer,
    tmp_path: Path,
) -> None:
    plain = chat_project(tmp_path / "plain")
    async with open_console(dev_url(plain)) as console:
        await console.open()
        page = console.page
        await expect(
            page.get_by_text("No sign-in: open to anyone who can reach it")
        ).to_be_visible()
        await expect(page.get_by_label("Message")).to_be_visible()
        await no_key_wording(page)

    tokens = with_auth(plain, tmp_path / "tokens", {"provider": "idp_b"}, idp_b.env)
    async with open_console(dev_url(tokens)) as console:
        await console.open()
        page = console.page
        await expect(page.get_by_test_id("signin-needed")).to_have_text(
            "This agent needs a signed-in user: give your user token above."
        )
        await no_key_wording(page)
        await page.get_by_role("button", name="Sign in").click()
        form = page.get_by_role("form", name="Sign in")
        await expect(form.get_by_label("With")).to_have_count(0)  # one kind: the token
        await expect(form.get_by_label("User token")).to_be_focused()
        await no_key_wording(page)
        await form.get_by_label("User token").fill(idp_b.mint(ALICE))
        await form.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_test_id("signed-in-as")).to_have_text(
            "Signed in with a user token"
        )
        await expect(page.get_by_label("Message")).to_be_visible()

    provider = with_auth(plain, tmp_path / "oidc", console_auth(oidc))
    async with open_console(dev_url(provider)) as console:
        await console.open()
        page = console.page
        host = urlsplit(oidc.issuer).netloc
        await expect(page.get_by_test_id("signin-needed")).to_have_text(
            f"This agent needs a signed-in user: sign in with {host} above."
        )
        await expect(page.get_by_role("button", name=f"Sign in with {host}")).to_be_visible()
        await expect(page.get_by_role("button", name="Use a token")).to_be_visible()
        await no_key_wording(page)
        await console.screenshot("signin-provider")


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
async def test_serve_offers_what_each_agent_takes(
    cluster: Cluster,
    open_console: OpenConsole,
    idp_b: IdpBServer,
    tmp_path: Path,
) -> None:
    first, second = cluster.start(), cluster.start()
    open_agent = agent_project(tmp_path / "operated", "operated")
    plain = chat_project(tmp_path / "plain")
    users = with_auth(plain, tmp_path / "chat", {"provider": "idp_b"}, idp_b.env)
    for project in (open_agent, users):
        deployed = cluster.deploy(project, first)
        assert deployed.exit_code == 0, deployed.err + deployed.out
    await agent_serving(second, "operated", 1)
    await agent_serving(second, "chat", 1)

    # No [auth]: the agent is its operator's, and the console says so.
    async with open_console(f"{second.url}/agents/operated") as console:
        await console.open()
        page = console.page
        await expect(page.get_by_test_id("signin-needed")).to_have_text(
            "This agent has no user sign-in ([auth]): only its operator can open it, "
            "with the deployment key above."
        )
        await expect(page.locator("body")).not_to_contain_text("signed-in user")
        await page.get_by_role("button", name="Sign in").click()
        form = page.get_by_role("form", name="Sign in")
        await expect(form.get_by_label("With")).to_have_count(0)
        await form.get_by_label("Deployment key").fill(KEY)
        await form.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_test_id("signed-in-as")).to_have_text("Operator (deployment key)")

    # [auth]: its users sign in; the operator may use the key.
    async with open_console(f"{second.url}/agents/chat") as console:
        await console.open()
        page = console.page
        await expect(page.get_by_test_id("signin-needed")).to_have_text(
            "This agent needs a signed-in user: give your user token above "
            "(or the operator's deployment key)."
        )
        await console.sign_in(idp_b.mint(ALICE), kind="User token")
        await expect(page.get_by_label("Message")).to_be_visible()
