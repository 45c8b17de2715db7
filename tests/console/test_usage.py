"""Every run watched and metered, seen in the console: a run's trace as a waterfall from the
thread view (a tool, an MCP call and a subagent, through the scripted model, its model calls'
tokens adding up to the run's usage); the operator's usage charts per day, user, model and
agent (two users on `agentctl serve`, the totals the API sums); a signed-in user's own usage
and budgets only."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client
from playwright.async_api import Locator, expect

from agentctl.testing.identity import IdpBServer
from agentctl.testing.mcp_servers import Ledger
from tests.console.conftest import DevUrl, OpenConsole
from tests.console.test_chat import subagent_project
from tests.production.conftest import KEY, Cluster
from tests.server.conftest import ALICE, BOB, user, with_auth

NOTE = {"file_path": "/notes.md", "content": "a note"}
TASK = {"description": "@say the helper found it", "subagent_type": "helper"}
SCRIPT = f"@call write_file {json.dumps(NOTE)}\n@call task {json.dumps(TASK)}\n@say all done"
PAID = {"entry": "paid"}
USER_TOKENS_PER_DAY = 100_000


def usage_of_run(run: Any) -> dict[str, Any]:
    """A run record's `usage` (the SDK's types do not know it yet)."""
    usage: dict[str, Any] = run["usage"]
    return usage


async def numbers(rows: Locator, attribute: str) -> list[int]:
    values = [await row.get_attribute(attribute) for row in await rows.all()]
    return [int(value) for value in values if value is not None]


async def test_a_runs_trace_is_a_waterfall_of_its_steps_with_the_runs_tokens(
    open_console: OpenConsole, dev_url: DevUrl, ledger: tuple[Ledger, int], tmp_path: Path
) -> None:
    project = subagent_project(tmp_path / "chat")
    mcp = {"mcpServers": {"ledger": {"url": f"http://127.0.0.1:{ledger[1]}/mcp"}}}
    (project / "mcp.json").write_text(json.dumps(mcp))
    url = dev_url(project)
    async with open_console(url) as console:
        page = console.page
        await console.open()
        await console.send(f"@call record {json.dumps(PAID)}\n{SCRIPT}")
        await console.wait_idle()
        thread_id = await console.thread_id()
        async with get_client(url=url, api_key=None) as client:
            [run] = await client.runs.list(thread_id)
        usage = usage_of_run(run)
        assert usage["total_tokens"] > 0
        assert usage["model_calls"] == 5  # 4 of the agent, 1 of its helper

        await console.go("Threads")
        await (
            page.get_by_test_id("threads")
            .locator(f"tr[data-thread-id='{thread_id}']")
            .get_by_role("link")
            .first.click()
        )
        runs = page.get_by_test_id("runs")
        row = runs.locator(f"tr[data-run='{run['run_id']}']")
        await expect(row).to_contain_text(f"{usage['total_tokens']:,}")
        await row.get_by_role("button", name="Trace").click()
        waterfall = page.get_by_test_id("waterfall")
        await expect(waterfall.get_by_test_id("run-usage")).to_have_attribute(
            "data-total-tokens", str(usage["total_tokens"])
        )
        steps = waterfall.locator("tbody tr")
        models = waterfall.locator("tr[data-kind='model']")
        await expect(models).to_have_count(5)
        mcp_call = waterfall.locator("tr[data-kind='mcp']", has_text="ledger/record")
        await expect(mcp_call).to_have_attribute("data-depth", "0")
        tool = waterfall.locator("tr[data-kind='tool']", has_text="write_file")
        await expect(tool).to_have_attribute("data-depth", "0")
        subagent = waterfall.locator("tr[data-kind='subagent']", has_text="helper")
        await expect(subagent).to_have_count(1)
        # The helper's model call is nested under its subagent step, right after it.
        kinds = [await step.get_attribute("data-kind") for step in await steps.all()]
        depths = await numbers(steps, "data-depth")
        at = kinds.index("subagent")
        assert kinds[at + 1] == "model", kinds
        assert depths[at + 1] == depths[at] + 1, depths
        # Each model call's tokens, added up, are the run's usage.
        assert sum(await numbers(models, "data-tokens")) == usage["total_tokens"]
        await expect(waterfall.get_by_test_id("step-error")).to_have_count(0)
        await waterfall.scroll_into_view_if_needed()
        await console.screenshot("trace")

        # A model call that fails is marked with its error.
        async with get_client(url=url, api_key=None) as client:
            failed = await client.runs.create(thread_id, "chat", input=user("@fail 400 refused"))
            await client.runs.join(thread_id, failed["run_id"])
        await page.reload()
        row = page.get_by_test_id("runs").locator(f"tr[data-run='{failed['run_id']}']")
        await row.get_by_role("button", name="Trace").click()
        step = page.get_by_test_id("waterfall").locator("tr[data-kind='model']")
        await expect(step.get_by_test_id("step-error")).to_contain_text(
            "failed: OpenAIInvalidRequestError"
        )

        # On `agentctl dev` without [auth], anyone sees the usage of every run (no platform).
        await console.go("Usage")
        await expect(page.get_by_test_id("usage-total")).to_have_attribute(
            "data-total-tokens", str(usage["total_tokens"])
        )
        await expect(page.get_by_test_id("chart-user").locator("g[data-key='']")).to_have_count(1)
        await expect(page.get_by_test_id("chart-model")).to_be_visible()
        await expect(
            page.get_by_role("heading", name="Tokens per agent on this platform")
        ).to_have_count(0)


def metered_project(root: Path, idp: IdpBServer) -> Path:
    """The chat agent with a subagent, `[auth]` by idp_b and a daily token budget per user."""
    project = with_auth(
        subagent_project(root.parent / "plain"), root, {"provider": "idp_b"}, idp.env
    )
    config = project / "agent.toml"
    config.write_text(
        config.read_text() + f"\n[budgets]\nuser_tokens_per_day = {USER_TOKENS_PER_DAY}\n"
    )
    return project


async def usage_of(url: str, headers: dict[str, str], group_by: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, headers=headers) as http:
        answer = await http.get("/usage", params={"group_by": group_by})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def chart_values(chart: Locator) -> dict[str, int]:
    """The bars of a chart: {key: value}."""
    bars = chart.locator("svg.bars g[data-key]")
    return {
        str(await bar.get_attribute("data-key")): int(str(await bar.get_attribute("data-value")))
        for bar in await bars.all()
    }


async def test_usage_charts_for_the_operator_and_a_users_own_usage_and_budget(
    cluster: Cluster, idp_b: IdpBServer, open_console: OpenConsole, tmp_path: Path
) -> None:
    replica = cluster.start()
    assert cluster.deploy(metered_project(tmp_path / "chat", idp_b), replica).exit_code == 0
    tokens = {ALICE: idp_b.mint(ALICE), BOB: idp_b.mint(BOB)}
    scripts = {ALICE: [SCRIPT, "@say hello"], BOB: ["@say a longer answer from bob's run"]}
    spent: dict[str, int] = {}
    for who, runs in scripts.items():
        headers = {"Authorization": f"Bearer {tokens[who]}"}
        spent[who] = 0
        async with get_client(url=replica.url, api_key=None, headers=headers) as client:
            for script in runs:
                thread = await client.threads.create()
                await client.runs.wait(thread["thread_id"], "chat", input=user(script))
                [run] = await client.runs.list(thread["thread_id"])
                spent[who] += usage_of_run(run)["total_tokens"]
    today = datetime.now(UTC).date().isoformat()
    total = sum(spent.values())
    by_model = await usage_of(replica.url, {"x-api-key": KEY}, "model")
    assert by_model["total"]["total_tokens"] == total

    # The operator: every user's, per day, user, model and (the console of the agent on the
    # platform) agent.
    async with open_console(replica.url) as console:
        page = console.page
        await page.goto(f"{replica.url}/agents/chat/ui/")
        await expect(page.get_by_role("navigation", name="Console")).to_be_visible()
        await console.sign_in(KEY, kind="Deployment key")
        await console.go("Usage")
        await expect(page.get_by_test_id("usage-total")).to_have_attribute(
            "data-total-tokens", str(total)
        )
        day = page.get_by_test_id("chart-day")
        await expect(day.locator(f"g[data-key='{today}']")).to_have_attribute(
            "data-value", str(total)
        )
        users = page.get_by_test_id("chart-user")
        await expect(users.locator("svg.bars g[data-key]")).to_have_count(2)
        assert await chart_values(users) == spent
        models = page.get_by_test_id("chart-model")
        await expect(models.locator("g[data-key='openai:scripted']")).to_have_attribute(
            "data-value", str(total)
        )
        agents = page.get_by_test_id("chart-agent")
        await expect(agents.locator("g[data-key='chat']")).to_have_attribute(
            "data-value", str(total)
        )
        await page.get_by_role("heading", name="Usage").scroll_into_view_if_needed()
        await console.screenshot("usage")
        # The same numbers as a table, and the chart says them to a screen reader.
        await users.get_by_text("Tokens per user as a table").click()
        await expect(users.locator(f"tbody tr[data-key='{BOB}'] td").first).to_have_text(
            f"{spent[BOB]:,}"
        )
        for who in (ALICE, BOB):
            said = re.compile(re.escape(f"{who} {spent[who]:,} tokens"))
            await expect(users.get_by_role("img")).to_have_accessible_name(said)
        await page.get_by_label("Cost").check()
        await expect(page.get_by_role("heading", name="Cost per user")).to_be_visible()

    # A user: their own usage and what their budget leaves, no one else's.
    async with open_console(replica.url) as console:
        page = console.page
        await console.open()
        await console.sign_in(tokens[BOB], kind="User token")
        await console.go("Usage")
        await expect(page.get_by_role("heading", name="Your usage")).to_be_visible()
        await expect(page.get_by_test_id("usage-today")).to_have_attribute(
            "data-total-tokens", str(spent[BOB])
        )
        budget = page.get_by_test_id("budgets").locator("li[data-budget='user_tokens_per_day']")
        left = USER_TOKENS_PER_DAY - spent[BOB]
        await expect(budget.get_by_test_id("budget-remaining")).to_contain_text(
            f"{left:,} tokens left of {USER_TOKENS_PER_DAY:,} tokens this day"
        )
        meter = budget.get_by_role("meter", name="user tokens per day used")
        await expect(meter).to_have_attribute("value", str(spent[BOB]))
        day = page.get_by_test_id("chart-day")
        await expect(day.locator(f"g[data-key='{today}']")).to_have_attribute(
            "data-value", str(spent[BOB])
        )
        await expect(page.get_by_test_id("chart-user")).to_have_count(0)
        await expect(page.get_by_test_id("chart-model")).to_have_count(0)
        await console.screenshot("usage-user")
    mine = await usage_of(replica.url, {"Authorization": f"Bearer {tokens[BOB]}"}, "user")
    assert [row["key"] for row in mine["rows"]] == [BOB]
