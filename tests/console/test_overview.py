"""The platform's console at the root `/ui/` of `agentctl serve` (two replicas, two agents):
the operator signs in with the deployment key and sees every agent side by side — its
active revision, its runs running, queued and failed, what it spent — and the deploys across
agents, then opens one agent's own console from there."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.console.conftest import OpenConsole
from tests.production.conftest import KEY, Cluster, agent_client, agent_project, agent_serving
from tests.server.conftest import user

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


def deploy(cluster: Cluster, folder: Path, name: str, replica: object, version: int) -> None:
    project = agent_project(folder, name)
    (project / "AGENTS.md").write_text(f"You are {name}, version {version}.\n")
    deployed = cluster.deploy(project, replica)  # type: ignore[arg-type]
    assert deployed.exit_code == 0, deployed.err + deployed.out


async def test_the_operator_sees_every_agent_and_switches_to_one(
    cluster: Cluster, open_console: OpenConsole, tmp_path: Path
) -> None:
    first, second = cluster.start(), cluster.start()
    deploy(cluster, tmp_path / "support", "support", first, 1)
    deploy(cluster, tmp_path / "research", "research", first, 1)
    deploy(cluster, tmp_path / "support", "support", first, 2)
    await agent_serving(second, "support", 2)
    await agent_serving(second, "research", 1)
    support, research = agent_client(first, "support"), agent_client(first, "research")
    # Runs on threads (a thread-less run is deleted once done, and counted nowhere).
    await support.runs.wait(
        str(uuid.uuid4()), "support", input=user("@say hello"), if_not_exists="create"
    )
    await research.runs.wait(
        str(uuid.uuid4()),
        "research",
        if_not_exists="create",
        input=user("@fail 400 the model refused"),
        raise_error=False,
    )

    async with open_console(second.url) as console:
        page = console.page
        await page.goto(f"{second.url}/ui/")
        await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        await expect(page.get_by_test_id("signin-needed")).to_contain_text("deployment key")
        await console.sign_in(KEY)
        await expect(page.get_by_test_id("signed-in-as")).to_have_text("Operator (deployment key)")
        await expect(page.get_by_role("heading", name="Platform overview")).to_be_visible()
        agents = page.get_by_test_id("agents")
        await expect(agents.get_by_role("rowheader")).to_have_text(["research", "support"])
        row = agents.locator("tr[data-agent='support']")
        await expect(row.locator("td").nth(0)).to_have_text("2")  # its active revision
        await expect(agents.locator("tr[data-agent='research'] td").nth(3)).to_have_text("1")
        await expect(row.locator("td").nth(4)).not_to_have_text("–")  # tokens spent

        # A run in flight on either replica is counted while it runs.
        thread = await support.threads.create()
        slow = await support.runs.create(
            thread["thread_id"], "support", input=user("@sleep 6 @say done")
        )
        await expect(row.locator("td").nth(1)).to_have_text("1", timeout=15_000)
        deploys = page.get_by_test_id("deploys").locator("tbody tr")
        await expect(deploys).to_have_count(3)
        await expect(deploys.nth(0)).to_contain_text("support")
        await expect(deploys.nth(0)).to_contain_text("Active")
        await expect(deploys.nth(2)).not_to_contain_text("Active")
        await console.screenshot("platform-overview")
        await support.runs.join(thread["thread_id"], slow["run_id"])

        # Switch to an agent's own console.
        await row.get_by_role("link", name="Open support's console").click()
        await expect(page).to_have_url(f"{second.url}/agents/support/ui/")
        await expect(page.get_by_role("navigation", name="Console")).to_be_visible()
        await expect(page.locator(".brand")).to_contain_text("support")
    await asyncio.gather(support.aclose(), research.aclose())


async def test_the_platform_root_refuses_a_wrong_key(
    cluster: Cluster, open_console: OpenConsole, tmp_path: Path
) -> None:
    replica = cluster.start()
    async with open_console(replica.url) as console:
        page = console.page
        await page.goto(f"{replica.url}/ui/")
        # No agent yet: the overview says so once signed in.
        await expect(page.get_by_test_id("signin-needed")).to_contain_text("deployment key")
        await page.get_by_role("button", name="Sign in").click()
        form = page.get_by_role("form", name="Sign in")
        await form.get_by_label("Deployment key").fill("pk-not-the-key")
        await form.get_by_role("button", name="Sign in").click()
        await expect(form.get_by_role("alert")).to_contain_text("401")
        await form.get_by_label("Deployment key").fill(KEY)
        await form.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_test_id("no-agents")).to_be_visible()
