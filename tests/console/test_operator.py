"""The operator's view of `agentctl serve`: two replicas over PostgreSQL and Redis, two
revisions deployed with `agentctl deploy`; the operator (the deployment key) rolls back from
the console opened on one replica and the other follows; runs in flight are listed and can
be cancelled; a user's token or no credentials get none of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import expect

from agentctl.testing.identity import IdpBServer
from tests.conftest import chat_project
from tests.console.conftest import DevUrl, OpenConsole
from tests.production.conftest import KEY, Cluster, info, serving
from tests.server.conftest import ALICE, user, with_auth

# A run without a stream asks the model for one answer: `@sleep` (not `@slow`) delays it.
SLOW = "@sleep 3 @say done slowly"


def revision(root: Path, idp: IdpBServer, number: int) -> Path:
    """The chat agent with `[auth]`, its instructions naming revision `number`."""
    if not root.exists():
        with_auth(chat_project(root.parent / "plain"), root, {"provider": "idp_b"}, idp.env)
    (root / "AGENTS.md").write_text(f"You are revision {number}.\n")
    return root


async def listed_revisions(url: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": KEY}) as http:
        answer = await http.get("/platform/revisions")
    assert answer.status_code == 200, answer.text
    revisions: list[dict[str, Any]] = answer.json()
    return revisions


async def test_operator_rolls_back_from_the_console_and_every_replica_follows(
    cluster: Cluster, idp_b: IdpBServer, open_console: OpenConsole, tmp_path: Path
) -> None:
    first, second = cluster.start(), cluster.start()
    project = revision(tmp_path / "chat", idp_b, 1)
    assert cluster.deploy(project, first).exit_code == 0
    assert cluster.deploy(revision(project, idp_b, 2), first).exit_code == 0
    await serving(second, 2)
    deployed = await listed_revisions(second.url)

    async with open_console(first.url) as console:
        page = console.page
        await console.open()
        await console.sign_in(KEY, kind="Deployment key")
        await expect(page.get_by_test_id("revision")).to_have_text("revision 2")
        await console.go("Operator")
        table = page.get_by_test_id("revisions")
        rows = table.locator("tbody tr")
        await expect(rows).to_have_count(2)
        for row, shown in zip(deployed, [rows.nth(0), rows.nth(1)], strict=True):
            await expect(shown.get_by_role("rowheader")).to_have_text(str(row["number"]))
            await expect(shown).to_contain_text(row["revision_id"][:12])
            await expect(shown).to_contain_text("chat")
            await expect(shown).to_contain_text("openai:scripted")
            await expect(shown).to_contain_text(", ".join(row["secrets"]) or "none")
        newest, oldest = table.locator("tr[data-number='2']"), table.locator("tr[data-number='1']")
        await expect(newest).to_contain_text("Active")
        await expect(newest.get_by_role("button")).to_have_count(0)
        await console.screenshot("operator")

        # Roll back: one click asks, the second does it.
        await oldest.get_by_role("button", name="Roll back to this").click()
        confirm = oldest.get_by_role("group", name="Activate revision 1?")
        await expect(confirm).to_contain_text("Serve revision 1 to new runs?")
        await expect(confirm.get_by_role("button", name="Cancel")).to_be_focused()
        await confirm.get_by_role("button", name="Confirm").click()
        await expect(oldest).to_contain_text("Active")
        await expect(newest.get_by_role("button", name="Activate")).to_be_visible()
        await expect(page.get_by_test_id("revision")).to_have_text("revision 1")
        await console.screenshot("operator-rollback")
        await serving(second, 1)
        assert (await info(second))["revision_number"] == 1
        assert [r["active"] for r in await listed_revisions(second.url)] == [False, True]

        # A chat on replica A is answered by revision 1; replica B reads the thread back.
        await console.go("Chat")
        await console.send("@say {system}")
        answer = page.locator(".message.ai").last
        await expect(answer).to_contain_text("You are revision 1.")
        await console.wait_idle()
        thread_id = await console.thread_id()
        on_b = cluster.client(second)
        state = await on_b.threads.get_state(thread_id)
        values: Any = state["values"]
        assert "You are revision 1." in values["messages"][-1]["content"]

        # Runs in flight on any replica are listed, and leave the list once done.
        await console.go("Operator")
        thread = await on_b.threads.create()
        slow = await on_b.runs.create(thread["thread_id"], "chat", input=user(SLOW))
        runs = page.get_by_test_id("runs")
        listed = runs.locator(f"tr[data-run='{slow['run_id']}']")
        await expect(listed).to_contain_text("running")
        await expect(listed).to_contain_text(thread["thread_id"])
        await console.screenshot("operator-runs")
        await on_b.runs.join(thread["thread_id"], slow["run_id"])
        await expect(page.get_by_test_id("no-runs")).to_be_visible()

        # ... and cancelled from the console.
        doomed = await on_b.runs.create(thread["thread_id"], "chat", input=user(SLOW))
        doomed_row = runs.locator(f"tr[data-run='{doomed['run_id']}']")
        await doomed_row.get_by_role("button", name=f"Cancel run {doomed['run_id']}").click()
        await expect(page.get_by_test_id("no-runs")).to_be_visible()
        cancelled = await on_b.runs.get(thread["thread_id"], doomed["run_id"])
        assert cancelled["status"] == "interrupted"

        # The sandboxes (none for this agent) and the metrics, fetched with the key.
        await expect(page.get_by_test_id("sandbox-settings")).to_contain_text("no sandbox")
        await page.get_by_role("button", name="Show the metrics (/metrics)").click()
        await expect(page.get_by_test_id("metrics")).to_contain_text("agentctl_runs{")
        docs = page.get_by_role("link", name="API docs (/docs)")
        assert await docs.get_attribute("href") == f"{first.url}/docs"
        await on_b.aclose()


async def test_a_user_or_a_visitor_without_credentials_sees_no_operator_view(
    cluster: Cluster, idp_b: IdpBServer, open_console: OpenConsole, tmp_path: Path
) -> None:
    replica = cluster.start()
    assert cluster.deploy(revision(tmp_path / "chat", idp_b, 1), replica).exit_code == 0
    token = idp_b.mint(ALICE)
    nav_links = ["Chat", "Threads", "Memory"]
    # A signed-in user has their own connections and usage too.
    user_links = [*nav_links, "Connections", "Usage"]

    async with open_console(replica.url) as console:
        page = console.page
        await console.open("operator")
        nav = page.get_by_role("navigation", name="Console")
        await expect(nav.get_by_role("link")).to_have_text(nav_links)
        await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        await expect(page.get_by_role("heading", name="Operator")).to_have_count(0)

        await console.sign_in(token, kind="User token")
        await expect(nav.get_by_role("link")).to_have_text(user_links)
        await page.goto(f"{replica.url}/ui/#/operator")
        await expect(page.get_by_label("Message")).to_be_visible()  # the chat instead
        await expect(page.get_by_role("heading", name="Operator")).to_have_count(0)

    async with httpx.AsyncClient(base_url=replica.url) as http:
        for path in ("/platform/revisions", "/platform/runs", "/platform/sandboxes"):
            refused = await http.get(path, headers={"Authorization": f"Bearer {token}"})
            assert refused.status_code == 403, (path, refused.text)
            assert (await http.get(path)).status_code == 401


async def test_on_dev_the_operator_view_says_it_takes_no_deploys(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with open_console(url) as console:
        await console.open("operator")  # anyone may, on dev without [auth]
        page = console.page
        await expect(page.get_by_test_id("no-deploys")).to_contain_text(
            "This server takes no deploys"
        )
        await expect(page.get_by_test_id("revision")).to_have_count(0)
        await expect(page.get_by_test_id("no-runs")).to_be_visible()
        await expect(page.get_by_test_id("sandbox-settings")).to_contain_text("no sandbox")
        await page.get_by_role("button", name="Show the metrics (/metrics)").click()
        await expect(page.get_by_test_id("metrics")).to_contain_text("agentctl_max_runs")
        await console.screenshot("operator-dev")
