"""Budgets across `agentctl serve` replicas over one PostgreSQL and one Redis: what a user
spent through one replica holds them on the other, runs per minute count the starts of every
replica, and a run crossing its budget stops there with its thread intact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk.errors import RateLimitError

from agentctl.testing.identity import IdpBServer
from tests.production.conftest import Cluster, agent_project, serving
from tests.server.conftest import ALICE, BOB, call, user, with_auth


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def budgeted(folder: Path, idp: IdpBServer, budgets: str) -> Path:
    project = agent_project(folder / "plain", "chat")
    config = project / "agent.toml"
    config.write_text(config.read_text() + "\n[budgets]\n" + budgets)
    return with_auth(project, folder / "signed-in", {"provider": "idp_b"}, idp.env)


async def test_a_budget_holds_a_user_on_every_replica(
    cluster: Cluster, tmp_path: Path, idp_b: IdpBServer
) -> None:
    project = budgeted(tmp_path, idp_b, "user_tokens_per_day = 1000\n")
    first, second = cluster.start(), cluster.start()
    assert cluster.deploy(project, first).exit_code == 0
    await serving(second, 1)
    alice_1 = cluster.client(first, api_key=None, headers=bearer(idp_b.mint(ALICE)))
    alice_2 = cluster.client(second, api_key=None, headers=bearer(idp_b.mint(ALICE)))
    bob_2 = cluster.client(second, api_key=None, headers=bearer(idp_b.mint(BOB)))
    try:
        thread_id = (await alice_1.threads.create())["thread_id"]
        write = call("write_file", file_path="/a.md", content="kept")
        parts = [
            part
            async for part in alice_1.runs.stream(
                thread_id, "chat", input=user(f"{write}\n@say written")
            )
        ]
        [error] = [part.data for part in parts if part.event == "error"]
        assert error["error"] == "BudgetExceeded"
        assert "of 1,000 tokens today (user_tokens_per_day in agent.toml)" in error["message"]
        state: Any = await alice_2.threads.get_state(thread_id)
        assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai", "tool"]

        # The other replica reads the same spend: Alice is refused there, Bob is not.
        with pytest.raises(RateLimitError) as caught:
            await alice_2.runs.create(thread_id, "chat", input=user("@say again"))
        assert str(caught.value).startswith(f"user {ALICE} has used ")
        assert caught.value.response.headers["Retry-After"].isdigit()
        mine: Any = await alice_2.http.get("/usage/me")
        [tokens] = [b for b in mine["budgets"] if b["name"] == "user_tokens_per_day"]
        assert tokens["used"] == mine["today"]["total_tokens"] > 1000
        # Bob is not held by Alice's spend.
        await bob_2.runs.wait(None, "chat", input=user("@say hi"))
    finally:
        for client in (alice_1, alice_2, bob_2):
            await client.aclose()


async def test_runs_per_minute_count_the_starts_of_every_replica(
    cluster: Cluster, tmp_path: Path, idp_b: IdpBServer
) -> None:
    project = budgeted(tmp_path, idp_b, "user_runs_per_minute = 3\n")
    first, second = cluster.start(), cluster.start()
    assert cluster.deploy(project, first).exit_code == 0
    await serving(second, 1)
    token = idp_b.mint(BOB)
    bob_1 = cluster.client(first, api_key=None, headers=bearer(token))
    bob_2 = cluster.client(second, api_key=None, headers=bearer(token))
    alice = cluster.client(first, api_key=None, headers=bearer(idp_b.mint(ALICE)))
    try:
        for n, client in enumerate((bob_2, bob_1, bob_2)):
            await client.runs.wait(None, "chat", input=user(f"@say {n}"))
        with pytest.raises(RateLimitError) as caught:
            await bob_1.runs.create(None, "chat", input=user("@say four"))
        assert str(caught.value).startswith(f"user {BOB} has started 3 of 3 runs allowed per")
        assert 1 <= int(caught.value.response.headers["Retry-After"]) <= 60
        await alice.runs.wait(None, "chat", input=user("@say mine"))
    finally:
        for client in (bob_1, bob_2, alice):
            await client.aclose()
