"""A platform of agents on two replicas over PostgreSQL + Redis: agents deployed with
`agentctl deploy` each answer at their own URL with the official SDK and see nothing of
each other; a rollback leaves no assistant id answered by the wrong agent; a deleted
agent is gone from every replica with its schema; a replica started later serves them all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from agentctl.storage.namespace import Namespace
from agentctl.testing.replicas import Replica
from tests.conftest import eventually
from tests.production.conftest import (
    OPERATOR,
    Cluster,
    agent_client,
    agent_project,
    agent_serving,
    said,
)
from tests.server.conftest import user


async def test_agents_answer_apart_at_their_own_urls(cluster: Cluster, tmp_path: Path) -> None:
    first, second = cluster.start(), cluster.start()
    names = ("alpha", "beta", "gamma")
    for name in names:
        deployed = cluster.deploy(agent_project(tmp_path / name, name), first)
        assert deployed.exit_code == 0, deployed.err + deployed.out
    clients = {name: agent_client(second, name) for name in names}
    for name in names:
        await agent_serving(second, name, 1)
        assert await said(clients[name], name, f"hi from {name}") == f"hi from {name}"

    # A thread of one agent is no other's.
    thread = await clients["alpha"].threads.create()
    with pytest.raises(httpx.HTTPStatusError) as missing:
        await clients["beta"].threads.get(thread["thread_id"])
    assert missing.value.response.status_code == 404

    async with httpx.AsyncClient(base_url=first.url, headers=OPERATOR) as http:
        listed = (await http.get("/platform/agents")).json()
        assert [(a["name"], a["active_revision"]) for a in listed] == [
            ("alpha", 1), ("beta", 1), ("gamma", 1)]  # fmt: skip
        assert listed[0]["url"] == f"{first.url}/agents/alpha"
        several = await http.get("/assistants/search")
        assert several.status_code == 404  # the root is no one agent's any more

        # Deploy A, deploy B, roll A back: B's assistant answers 404 at A's URL only.
        assert cluster.deploy(agent_project(tmp_path / "alpha", "alpha"), first).exit_code == 0
        rolled = await http.post("/platform/agents/alpha/revisions/1/activate")
        assert rolled.status_code == 200, rolled.text
    await agent_serving(second, "alpha", 1)
    beta = (await clients["beta"].assistants.search())[0]["assistant_id"]
    found = await clients["alpha"].assistants.search()
    assert [a["graph_id"] for a in found] == ["alpha"]
    for call in (
        clients["alpha"].assistants.get(beta),
        clients["alpha"].runs.wait(None, beta, input=user("@say wrong agent")),
    ):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await call
        assert refused.value.response.status_code == 404
    assert await said(clients["beta"], beta, "still beta") == "still beta"

    # Deleting an agent takes it off every replica, and its schema with it: the replica
    # running one of its runs stops it and lets go of the schema before it is dropped.
    gamma = agent_client(first, "gamma")
    slow: Any = await gamma.runs.create(None, "gamma", input=user("@slow 0.5 @say " + "w " * 60))

    async def running() -> bool:
        found = await gamma.runs.list(slow["thread_id"])
        return bool(found[0]["status"] == "running")

    await eventually(running, 10, "the run of gamma to start")
    await gamma.aclose()
    runner, other = cluster.executing(slow["run_id"], "gamma")
    async with httpx.AsyncClient(base_url=other.url, headers=OPERATOR, timeout=30) as http:
        deleted = await http.delete("/platform/agents/gamma")
    assert deleted.status_code == 200, deleted.text
    schema = Namespace.of("gamma").schema
    assert deleted.json()["schema"] == schema
    assert deleted.json()["deleted"]["assistants"] == 1
    for replica in (first, second):

        async def gone(replica: Replica = replica) -> bool:
            async with httpx.AsyncClient(base_url=replica.url) as http:
                return (await http.get("/agents/gamma/info")).status_code == 404

        await eventually(gone, 10, f"gamma to be gone from {replica.url}")
    with psycopg.connect(cluster.env["DATABASE_URL"]) as conn:
        found_schema = conn.execute(
            "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)
        ).fetchone()
    assert found_schema is None
    # The runner had stopped the run and closed gamma's pool before its schema was dropped.
    assert "stopped serving agent 'gamma'" in runner.output()
    for replica in (runner, other):  # and none worked on in the schema gone under it
        problems = [line for line in replica.output().splitlines() if '"error"' in line]
        assert not problems, "\n".join(problems)

    # A replica started now serves every agent there is.
    third = cluster.start()
    await agent_serving(third, "alpha", 1)
    clients["third"] = agent_client(third, "beta")
    assert await said(clients["third"], "beta", "from three") == "from three"
    async with httpx.AsyncClient(base_url=third.url) as http:
        assert (await http.get("/agents/gamma/info")).status_code == 404
    for each in clients.values():
        await each.aclose()
