"""Budgets and rate limits (`[budgets]`, `AGENTCTL_BUDGET_*`) on real servers, through the
official langgraph-sdk, MCP and A2A clients: a run that would start over a budget is
refused with 429 naming it, a run crossing one stops at its next model call with its
thread intact, and other users go on."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import TaskState
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import RateLimitError

from agentctl.metering import prices
from agentctl.metering.prices import Price
from agentctl.storage.base import Cron
from agentctl.testing import ScriptedModelServer
from agentctl.testing.identity import IdpBServer
from tests.conftest import chat_project
from tests.server.conftest import (
    ALICE,
    BOB,
    PLATFORM_OPERATOR,
    Running,
    agent_files,
    call,
    error_detail,
    running_server,
    sdk,
    upload,
    user,
)
from tests.server.test_a2a import a2a_client, message, send
from tests.server.test_mcp import mcp_session, text_of

AGENT = "chat"


def budget_project(
    root: Path,
    budgets: str,
    *,
    idp: IdpBServer | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """The chat agent with `budgets` as its `[budgets]` (none when empty), signed-in users
    of `idp` when given, and `env` in its .env."""
    chat_project(root, AGENT)
    config = root / "agent.toml"
    text = config.read_text()
    if budgets:
        text += "\n[budgets]\n" + budgets
    if idp is not None:
        text += '\n[auth]\nprovider = "idp_b"\n'
    config.write_text(text)
    dotenv = {**(idp.env if idp is not None else {}), **(env or {})}
    (root / ".env").write_text("".join(f"{k}={v}\n" for k, v in dotenv.items()))
    return root


def set_budgets(root: Path, budgets: str) -> None:
    """Replace the project's `[budgets]` (a new revision of it)."""
    config = root / "agent.toml"
    head, _, tail = config.read_text().partition("\n[budgets]\n")
    rest = tail.partition("\n[")[2]
    config.write_text(head + "\n[budgets]\n" + budgets + ("\n[" + rest if rest else ""))


@asynccontextmanager
async def clients(running: Running, idp: IdpBServer) -> AsyncIterator[dict[str, LangGraphClient]]:
    made = {name: sdk(running.url, token=idp.mint(name)) for name in (ALICE, BOB)}
    try:
        yield made
    finally:
        for client in made.values():
            await client.aclose()


def seconds_to_midnight() -> float:
    at = datetime.now(UTC)
    midnight = at.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    return (midnight - at).total_seconds()


async def spent(running: Running, thread_id: str) -> int:
    """The tokens the thread's runs spent, as their records store it."""
    runs = await running.server.storage.runs.list(thread_id, status=None, limit=100, offset=0)
    return sum(int((run.usage or {}).get("total_tokens") or 0) for run in runs)


async def usage_me(client: LangGraphClient) -> dict[str, Any]:
    answer: dict[str, Any] = await client.http.get("/usage/me")
    return answer


def detail_of(error: httpx.HTTPStatusError) -> str:
    return str(json.loads(error.response.content)["detail"])


def last_content(values: Any) -> Any:
    return values["messages"][-1]["content"]


def budget_of(usage: dict[str, Any], name: str) -> dict[str, Any]:
    [found] = [b for b in usage["budgets"] if b["name"] == name]
    return dict(found)


async def test_an_over_budget_user_gets_429_naming_the_limit_while_another_goes_on(
    tmp_path: Path, idp_b: IdpBServer
) -> None:
    project = budget_project(tmp_path / "p", "user_tokens_per_day = 1000\n", idp=idp_b)
    async with (
        running_server(project, tmp_path / "data") as running,
        clients(running, idp_b) as users,
    ):
        alice, bob = users[ALICE], users[BOB]
        thread = await alice.threads.create()
        thread_id = thread["thread_id"]
        await alice.runs.wait(thread_id, AGENT, input=user("@say hello"))
        used = await spent(running, thread_id)
        assert used > 1000  # one model call of the deep agent reads its whole prompt

        expected = (
            f"user {ALICE} has used {used:,} of 1,000 tokens today (user_tokens_per_day in "
            "agent.toml); it resets at 00:00 UTC"
        )
        # The SDK's `create` and `stream` raise its RateLimitError, whose message is the
        # detail; `wait` raises httpx's HTTPStatusError (RateLimitError's base), the body
        # in its notes.
        with pytest.raises(RateLimitError) as limited:
            await alice.runs.create(thread_id, AGENT, input=user("@say again"))
        assert str(limited.value) == expected
        assert error_detail(limited) == expected
        assert limited.value.status_code == 429
        retry_after = int(limited.value.response.headers["Retry-After"])
        assert abs(retry_after - seconds_to_midnight()) < 5
        with pytest.raises(RateLimitError) as limited:
            [part async for part in alice.runs.stream(None, AGENT, input=user("@say x"))]
        assert str(limited.value) == expected
        with pytest.raises(httpx.HTTPStatusError) as caught:
            await alice.runs.wait(thread_id, AGENT, input=user("@say y"))
        assert caught.value.response.status_code == 429
        assert detail_of(caught.value) == expected
        assert expected in "".join(getattr(caught.value, "__notes__", []))
        # Nothing was created by the refused requests.
        assert len(await alice.threads.search()) == 1
        assert len(await alice.runs.list(thread_id)) == 1

        # Bob is not held by Alice's spend.
        answer = await bob.runs.wait(None, AGENT, input=user("@say hi bob"))
        assert last_content(answer) == "hi bob"

        mine = await usage_me(alice)
        assert mine["user_id"] == ALICE
        assert mine["today"]["total_tokens"] == used
        assert budget_of(mine, "user_tokens_per_day") | {"resets_at": None} == {
            "name": "user_tokens_per_day",
            "scope": "user",
            "limit": 1000,
            "used": used,
            "remaining": 0,
            "unit": "tokens",
            "window": "day",
            "resets_at": None,
            "set_by": "agent.toml",
        }
        tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
        assert budget_of(mine, "user_tokens_per_day")["resets_at"] == f"{tomorrow}T00:00:00Z"
        bobs = await usage_me(bob)
        assert bobs["user_id"] == BOB
        bobs_tokens = bobs["today"]["total_tokens"]
        assert budget_of(bobs, "user_tokens_per_day")["used"] == bobs_tokens > 0
        assert (await usage_me(alice))["today"]["total_tokens"] == used  # not Bob's too


WRITE = call("write_file", file_path="/notes.md", content="kept")


async def test_a_run_crossing_the_budget_stops_at_its_next_model_call_with_its_thread_intact(
    tmp_path: Path, idp_b: IdpBServer
) -> None:
    project = budget_project(tmp_path / "p", "user_tokens_per_day = 1000\n", idp=idp_b)
    data = tmp_path / "data"
    async with running_server(project, data) as running, clients(running, idp_b) as users:
        alice, bob = users[ALICE], users[BOB]
        thread_id = (await alice.threads.create())["thread_id"]
        # A tool loop: the first model call writes a file, the second would answer.
        parts = [
            part
            async for part in alice.runs.stream(
                thread_id, AGENT, input=user(f"{WRITE}\n@say written"), stream_mode="values"
            )
        ]
        [error] = [part.data for part in parts if part.event == "error"]
        assert error["error"] == "BudgetExceeded"
        used = await spent(running, thread_id)
        assert error["message"] == (
            f"the run stopped before its next model call: user {ALICE} has used {used:,} of "
            "1,000 tokens today (user_tokens_per_day in agent.toml); it resets at 00:00 UTC — "
            "the thread keeps everything up to here; continue it then, or once the budget "
            "is raised"
        )
        [run] = await running.server.storage.runs.list(thread_id, status=None, limit=9, offset=0)
        assert run.status == "error"
        assert (run.usage or {})["model_calls"] == 1
        # Everything up to the stop is kept: the tool's call and its result.
        state = await alice.threads.get_state(thread_id)
        values: Any = state["values"]
        kinds = [m["type"] for m in values["messages"]]
        assert kinds == ["human", "ai", "tool"]
        assert values["files"]["/notes.md"]["content"] in (["kept"], "kept")
        # Bob's runs go on meanwhile.
        answer = await bob.runs.wait(None, AGENT, input=user("@say still here"))
        assert last_content(answer) == "still here"
        with pytest.raises(RateLimitError):
            await alice.runs.create(thread_id, AGENT, input=user("@say go on"))

    set_budgets(project, "user_tokens_per_day = 1000000000\n")  # raised
    async with running_server(project, data) as running, clients(running, idp_b) as users:
        alice = users[ALICE]
        answer = await alice.runs.wait(thread_id, AGENT, input=user("@say going on"))
        final: Any = answer
        messages: list[Any] = final["messages"]
        assert [m["type"] for m in messages] == ["human", "ai", "tool", "human", "ai"]
        assert messages[-1]["content"] == "going on"


async def test_runs_per_minute_count_every_start_of_the_user(
    tmp_path: Path, idp_b: IdpBServer
) -> None:
    project = budget_project(tmp_path / "p", "user_runs_per_minute = 2\n", idp=idp_b)
    async with (
        running_server(project, tmp_path / "data") as running,
        clients(running, idp_b) as users,
    ):
        alice, bob = users[ALICE], users[BOB]
        # Stateless runs delete their thread and run when they end: they count all the same.
        for n in range(2):
            await alice.runs.wait(None, AGENT, input=user(f"@say {n}"))
        with pytest.raises(RateLimitError) as caught:
            await alice.runs.create(None, AGENT, input=user("@say 3"))
        retry_after = int(caught.value.response.headers["Retry-After"])
        assert 1 <= retry_after <= 60
        assert error_detail(caught) == (
            f"user {ALICE} has started 2 of 2 runs allowed per minute (user_runs_per_minute in "
            f"agent.toml); retry in {retry_after} s"
        )
        await bob.runs.wait(None, AGENT, input=user("@say bob's"))
        mine = budget_of(await usage_me(alice), "user_runs_per_minute")
        assert (mine["used"], mine["remaining"], mine["window"]) == (2, 0, "minute")


async def test_a_request_that_creates_no_run_uses_none_of_the_runs_per_minute(
    tmp_path: Path, idp_b: IdpBServer
) -> None:
    project = budget_project(tmp_path / "p", "user_runs_per_minute = 2\n", idp=idp_b)
    async with (
        running_server(project, tmp_path / "data") as running,
        clients(running, idp_b) as users,
    ):
        alice = users[ALICE]
        nothing_yet = (await usage_me(alice))["today"]
        assert (nothing_yet["total_tokens"], nothing_yet["runs"]) == (0, 0)
        missing = "00000000-0000-4000-8000-000000000000"
        for _ in range(3):  # a thread that does not exist: 404, no run
            with pytest.raises(httpx.HTTPStatusError) as caught:
                await alice.runs.create(missing, AGENT, input=user("@say lost"))
            assert caught.value.response.status_code == 404
        for n in range(2):
            await alice.runs.wait(None, AGENT, input=user(f"@say {n}"))
        after = await usage_me(alice)
        mine = budget_of(after, "user_runs_per_minute")
        assert (mine["used"], mine["remaining"]) == (2, 0)
        assert set(after["today"]) == set(nothing_yet)  # the same keys, spent or not


async def test_the_agent_budget_holds_every_caller_and_usage_me_shows_the_agent(
    tmp_path: Path,
) -> None:
    project = budget_project(tmp_path / "p", "agent_tokens_per_day = 1000\n")
    async with running_server(project, tmp_path / "data") as running:
        client = running.client  # anonymous: `agentctl dev` without [auth]
        thread_id = (await client.threads.create())["thread_id"]
        await client.runs.wait(thread_id, AGENT, input=user("@say hello"))
        used = await spent(running, thread_id)
        with pytest.raises(RateLimitError) as caught:
            await client.runs.create(None, AGENT, input=user("@say again"))
        assert error_detail(caught) == (
            f"agent {AGENT} has used {used:,} of 1,000 tokens today (agent_tokens_per_day in "
            "agent.toml); it resets at 00:00 UTC"
        )
        usage = await usage_me(client)
        assert usage["user_id"] is None
        assert usage["today"]["total_tokens"] == used
        assert [b["name"] for b in usage["budgets"]] == ["agent_tokens_per_day"]


async def test_the_operator_settings_hold_and_the_stricter_limit_wins(tmp_path: Path) -> None:
    env = {"AGENTCTL_BUDGET_AGENT_RUNS_PER_MINUTE": "1", "AGENTCTL_BUDGET_USER_COST_PER_DAY": "9"}
    project = budget_project(tmp_path / "p", "agent_runs_per_minute = 5\n", env=env)
    async with running_server(project, tmp_path / "data") as running:
        await running.client.runs.wait(None, AGENT, input=user("@say one"))
        with pytest.raises(RateLimitError) as caught:
            await running.client.runs.create(None, AGENT, input=user("@say two"))
        assert (
            "(agent_runs_per_minute, set by the operator's AGENTCTL_BUDGET_AGENT_RUNS_PER_MINUTE)"
            in error_detail(caught)
        )
        usage = await usage_me(running.client)
        # Without a user, only the agent's budgets hold.
        assert [(b["name"], b["limit"], b["set_by"]) for b in usage["budgets"]] == [
            ("agent_runs_per_minute", 1, "operator")
        ]


async def test_serve_holds_every_agent_of_the_platform_to_the_operator_settings(
    tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    from agentctl.settings import Settings
    from tests.server.conftest import PLATFORM_KEY, platform_at

    settings = Settings.from_env(
        {
            "PLATFORM_API_KEY": PLATFORM_KEY,
            "AGENTCTL_DATA_DIR": str(tmp_path / "platform"),
            "AGENTCTL_BUDGET_AGENT_RUNS_PER_MINUTE": "1",
        }
    )
    async with platform_at(settings) as (_, http):
        for name in ("one", "two"):
            answer = await upload(http, agent_files(tmp_path / name, name, "Hi."), model_server)
            assert answer.status_code == 201, answer.text
        for name in ("one", "two"):  # each agent counts its own runs
            body = {"assistant_id": name, "input": user("@say hi")}
            ran = await http.post(f"/agents/{name}/runs/wait", json=body, headers=PLATFORM_OPERATOR)
            assert ran.status_code == 200, ran.text
        refused = await http.post(
            "/agents/one/runs/wait",
            json={"assistant_id": "one", "input": user("@say again")},
            headers=PLATFORM_OPERATOR,
        )
        assert refused.status_code == 429
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
        assert refused.json()["detail"].startswith(
            "agent one has started 1 of 1 runs allowed per minute (agent_runs_per_minute, set "
            "by the operator's AGENTCTL_BUDGET_AGENT_RUNS_PER_MINUTE); retry in "
        )


async def test_mcp_and_a2a_refuse_clearly(tmp_path: Path) -> None:
    project = budget_project(tmp_path / "p", "agent_runs_per_minute = 1\n")
    async with running_server(project, tmp_path / "data") as running:
        await running.client.runs.wait(None, AGENT, input=user("@say one"))
        expected = "agent chat has started 1 of 1 runs allowed per minute"
        async with mcp_session(running) as session:
            result = await session.call_tool(AGENT, {"message": "@say two"})
        assert result.isError
        assert expected in text_of(result)
        async with a2a_client(running, AGENT) as client:
            task = await send(client, message("@say three"))
        assert TaskState.Name(task.status.state) == "TASK_STATE_FAILED"
        text = "".join(part.text for part in task.status.message.parts)
        assert expected in text


async def test_a_cron_over_budget_skips_its_run_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    project = budget_project(tmp_path / "p", "agent_runs_per_minute = 1\n")
    async with running_server(project, tmp_path / "data") as running:
        await running.client.runs.wait(None, AGENT, input=user("@say one"))
        created = await running.client.crons.create(
            AGENT, schedule="0 0 1 1 *", input=user("@say from cron")
        )
        cron_id: Any = dict(created)["cron_id"]
        cron = await running.server.storage.crons.get(cron_id)
        assert isinstance(cron, Cron)
        with caplog.at_level(logging.WARNING, logger="agentctl.engine"):
            assert await running.server.scheduler.fire(cron) is None
        assert f"cron {cron.cron_id} skipped a run: agent chat has started 1 of 1 runs" in (
            caplog.text
        )


@contextmanager
def statements(running: Running) -> Iterator[list[str]]:
    """Every SQL statement the embedded database runs meanwhile."""
    seen: list[str] = []
    conn: sqlite3.Connection = running.server.storage.conn  # type: ignore[attr-defined]
    conn.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        conn.set_trace_callback(None)


async def test_without_budgets_a_run_reads_nothing_more(tmp_path: Path) -> None:
    async with running_server(budget_project(tmp_path / "p", ""), tmp_path / "data") as running:
        with statements(running) as seen:
            await running.client.runs.wait(None, AGENT, input=user("@say hi"))
        assert seen
        assert not [s for s in seen if "run_starts" in s or "SUM(" in s]


@pytest.fixture
def scripted_priced(monkeypatch: pytest.MonkeyPatch) -> Price:
    """The scripted model at $1,000 per million tokens, as an operator's prices file says."""
    price = Price(1000.0, 1000.0, 1000.0)
    monkeypatch.setattr(prices, "_current", prices.Prices({"openai:scripted": price}))
    return price


async def test_a_cost_budget_stops_a_run_at_its_next_model_call(
    tmp_path: Path, idp_b: IdpBServer, scripted_priced: Price
) -> None:
    project = budget_project(tmp_path / "p", "user_cost_per_day = 1.0\n", idp=idp_b)
    async with (
        running_server(project, tmp_path / "data") as running,
        clients(running, idp_b) as users,
    ):
        alice = users[ALICE]
        thread_id = (await alice.threads.create())["thread_id"]
        parts = [
            part
            async for part in alice.runs.stream(
                thread_id, AGENT, input=user(f"{WRITE}\n@say written")
            )
        ]
        [error] = [part.data for part in parts if part.event == "error"]
        tokens = await spent(running, thread_id)
        cost = tokens * 1000.0 / 1_000_000
        assert error["message"].startswith(
            f"the run stopped before its next model call: user {ALICE} has spent ${cost:,.2f} "
            "of $1.00 today (user_cost_per_day in agent.toml); it resets at 00:00 UTC"
        )
        with pytest.raises(RateLimitError):
            await alice.runs.create(thread_id, AGENT, input=user("@say more"))
        mine = budget_of(await usage_me(alice), "user_cost_per_day")
        assert (mine["unit"], mine["limit"], mine["remaining"]) == ("usd", 1.0, 0)
        assert mine["used"] == pytest.approx(cost)
