"""The operator's views of a server: every run in flight and queued (`GET /platform/runs`)
and the sandboxes (`GET /platform/sandboxes`); a signed-in user gets 403."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx

from tests.conftest import eventually
from tests.server.conftest import Running, TwoUsers, user

DEPLOY_KEY = "pk-operator-views-0123456789"


async def listed(http: httpx.AsyncClient, query: str = "") -> list[dict[str, Any]]:
    answer = await http.get(f"/platform/runs{query}")
    assert answer.status_code == 200, answer.text
    runs: list[dict[str, Any]] = answer.json()
    return runs


async def test_runs_in_flight_and_queued_across_threads(agent: Running) -> None:
    client = agent.client
    first = (await client.threads.create())["thread_id"]
    second = (await client.threads.create())["thread_id"]
    running = await client.runs.create(first, "demo", input=user("@sleep 1.5 @say first"))
    queued = await client.runs.create(
        first, "demo", input=user("@say after"), multitask_strategy="enqueue"
    )
    other = await client.runs.create(second, "demo", input=user("@sleep 1.5 @say other"))
    async with httpx.AsyncClient(base_url=agent.url) as http:

        async def both_running() -> list[dict[str, Any]] | None:
            runs = await listed(http, "?status=running")
            return runs if len(runs) == 2 else None

        runs = await eventually(both_running, 10, "both slow runs to run")
        assert {r["run_id"] for r in runs} == {running["run_id"], other["run_id"]}
        assert {r["thread_id"] for r in runs} == {first, second}
        pending = await listed(http, "?status=pending")
        assert [(r["run_id"], r["status"]) for r in pending] == [(queued["run_id"], "pending")]
        every = await listed(http)
        oldest_first = [running["run_id"], queued["run_id"], other["run_id"]]
        assert [r["run_id"] for r in every] == oldest_first
        page = await http.get("/platform/runs?limit=1")
        assert page.headers["X-Pagination-Total"] == "3"
        assert len(page.json()) == 1
        bad = await http.get("/platform/runs?status=success")
        assert bad.status_code == 422

        await client.runs.join(first, queued["run_id"])
        await client.runs.join(second, other["run_id"])
        assert await listed(http) == []
        # Deploys are `agentctl serve`'s: dev says so.
        revisions = await http.get("/platform/revisions")
        assert revisions.status_code == 404
        assert "takes no deploys" in revisions.json()["detail"]


async def test_sandboxes_show_the_revision_settings(agent: Running) -> None:
    async with httpx.AsyncClient(base_url=agent.url) as http:
        answer = await http.get("/platform/sandboxes")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["settings"] == {
        "provider": "none",
        "scope": "thread",
        "image": "python:3",
        "template": "agent-deploy",
    }
    assert body["sandboxes"] == []


async def test_a_signed_in_user_cannot_see_the_operator_views(two_users: TwoUsers) -> None:
    server = two_users.running.server
    server.access = replace(server.access, api_key=DEPLOY_KEY, dev_ui=False)
    thread = await two_users.alice.threads.create()
    run = await two_users.alice.runs.create(
        thread["thread_id"], "demo", input=user("@sleep 1 @say mine")
    )
    alice = {"Authorization": f"Bearer {two_users.idp.mint('alice@example.com')}"}
    async with httpx.AsyncClient(base_url=two_users.running.url) as http:
        for path in ("/platform/runs", "/platform/sandboxes"):
            refused = await http.get(path, headers=alice)
            assert refused.status_code == 403, refused.text
            assert "only the deployment's operator" in refused.json()["detail"]
            nobody = await http.get(path)
            assert nobody.status_code == 401
        seen = await http.get("/platform/runs", headers={"x-api-key": DEPLOY_KEY})
    assert seen.status_code == 200
    assert [r["run_id"] for r in seen.json()] == [run["run_id"]]
    await two_users.alice.runs.join(thread["thread_id"], run["run_id"])
