"""Several `agentctl serve` replicas over one PostgreSQL and one Redis: any replica serves any
request, streams and cancels cross replicas, a killed replica's run is resumed elsewhere, and
deploys reach every replica while runs are in flight."""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentctl.storage.base import event_position
from agentctl.testing.identity import IdpBServer
from agentctl.testing.mcp_servers import Ledger
from agentctl.testing.replicas import start_replica
from tests.conftest import PAYING_SCRIPT, eventually, ledger_project
from tests.production.conftest import KEY, Cluster, agent_project, info, serving
from tests.server.conftest import ALICE, BOB, user, with_auth
from tests.server.test_isolation import remember


def answer(values: object) -> str:
    assert isinstance(values, dict), values
    content: str = values["messages"][-1]["content"]
    return content


async def run_status(client: Any, thread_id: str, run_id: str) -> str:
    status: str = (await client.runs.get(thread_id, run_id))["status"]
    return status


async def test_deploys_go_live_on_every_replica(cluster: Cluster, demo: Path) -> None:
    first, second = cluster.start(), cluster.start()
    async with httpx.AsyncClient(base_url=first.url, headers={"x-api-key": KEY}) as http:
        before = await http.post("/runs/wait", json={"assistant_id": "demo", "input": {}})
    assert before.status_code == 503
    assert "no revision is deployed on this server yet" in before.json()["detail"]

    result = cluster.deploy(demo, first)
    assert result.exit_code == 0, result.err + result.out
    assert "Deployed revision 1" in result.out
    assert f"URL   {first.url}" in result.out
    assert '-H "x-api-key: $PLATFORM_API_KEY"' in result.out
    for step in ("Validating", "Bundling", "Uploading", "Switching"):
        assert step in result.err

    await serving(second, 1)
    client = cluster.client(second)
    values = await client.runs.wait(None, "demo", input=user("@say hello from two"))
    assert answer(values) == "hello from two"
    await client.aclose()

    # The model key went along, sealed: never in a response, the database or a log line.
    secret = cluster.env["OPENAI_API_KEY"]
    async with httpx.AsyncClient(base_url=second.url, headers={"x-api-key": KEY}) as http:
        listed = await http.get("/platform/revisions")
    assert listed.json()[0]["secrets"] == ["OPENAI_API_KEY", "OPENAI_BASE_URL"]
    assert secret not in listed.text
    with cluster.connect() as conn:
        dump = "".join(str(row) for row in conn.execute("SELECT * FROM revisions"))
    assert secret not in dump
    for replica in (first, second):
        assert secret not in replica.output()


async def test_join_and_cancel_reach_the_replica_running_the_run(
    cluster: Cluster, demo: Path
) -> None:
    cluster.start()
    cluster.start()
    assert cluster.deploy(demo, cluster.replicas[0]).exit_code == 0
    any_client = cluster.client(cluster.replicas[0])
    thread = await any_client.threads.create()
    thread_id = thread["thread_id"]
    run = await any_client.runs.create(thread_id, "demo", input=user("@sleep 30 @say late"))
    await eventually(lambda: _is(any_client, thread_id, run["run_id"], "running"), 20)
    _, elsewhere = cluster.executing(run["run_id"])
    other = cluster.client(elsewhere)

    events: list[Any] = []

    async def follow() -> None:
        async for part in other.runs.join_stream(thread_id, run["run_id"]):
            events.append(part)

    follower = asyncio.create_task(follow())
    await eventually(lambda: _true(bool(events)), 20, "the joined stream to start")
    await other.runs.cancel(thread_id, run["run_id"], wait=True)
    await asyncio.wait_for(follower, 10)
    assert await run_status(other, thread_id, run["run_id"]) == "interrupted"
    assert events[0].event == "metadata"
    assert events[0].data["run_id"] == run["run_id"]
    # A cancel answers once the run has stopped, wherever it ran: never `running` after.
    for _ in range(3):
        again = await any_client.runs.create(thread_id, "demo", input=user("@sleep 30 @say no"))
        run_id = again["run_id"]
        await eventually(partial(_is, any_client, thread_id, run_id, "running"), 20)
        _, elsewhere = cluster.executing(run_id)
        canceller = cluster.client(elsewhere)
        await canceller.runs.cancel(thread_id, run_id)
        assert await run_status(canceller, thread_id, run_id) == "interrupted"
        await canceller.aclose()
    await any_client.aclose()
    await other.aclose()


async def test_a_killed_replicas_run_resumes_on_another(
    cluster: Cluster, tmp_path: Path, ledger: tuple[Ledger, int]
) -> None:
    book, port = ledger
    project = ledger_project(tmp_path / "payer", port)
    cluster.start()
    cluster.start()
    assert cluster.deploy(project, cluster.replicas[0]).exit_code == 0
    any_client = cluster.client(cluster.replicas[0])
    thread_id = str(uuid.uuid4())
    run = await any_client.runs.create(
        thread_id, "payer", input=user(PAYING_SCRIPT), if_not_exists="create"
    )
    await eventually(lambda: _is(any_client, thread_id, run["run_id"], "running"), 20)
    runner, survivor = cluster.executing(run["run_id"], agent="payer")
    client = cluster.client(survivor)
    parts: list[Any] = []
    cut: list[str] = []  # ids a client following the dying replica received

    async def follow() -> None:
        async for part in client.runs.join_stream(thread_id, run["run_id"], last_event_id="-"):
            parts.append(part)

    async def follow_the_runner() -> None:
        path = f"/threads/{thread_id}/runs/{run['run_id']}/stream"
        headers = {"x-api-key": KEY, "Last-Event-ID": "-"}
        async with httpx.AsyncClient(base_url=runner.url, timeout=60) as http:
            with contextlib.suppress(httpx.TransportError):
                async with http.stream("GET", path, headers=headers) as response:
                    async for line in response.aiter_lines():
                        if line.startswith("id: "):
                            cut.append(line[4:])

    follower = asyncio.create_task(follow())
    dropped = asyncio.create_task(follow_the_runner())
    await eventually(lambda: _true(book.entries == ["paid"]), 20, "the tool call")
    await asyncio.sleep(0.3)  # the tool's result is checkpointed; the model sleeps
    runner.kill()
    await asyncio.wait_for(dropped, 10)
    await asyncio.wait_for(follower, 30)

    done = await client.runs.get(thread_id, run["run_id"])
    assert done["status"] == "success"
    assert book.entries == ["paid"]  # resumed from the checkpoint: not paid twice
    attempts = [p.data["attempt"] for p in parts if p.event == "metadata"]
    assert attempts == [1, 2]
    values = [p.data for p in parts if p.event == "values"]
    assert answer(values[-1]) == "done"
    state = await client.threads.get_state(thread_id)
    assert answer(state["values"]) == "done"

    # The client cut off with the replica resumes on another with Last-Event-ID: it gets
    # exactly the events it missed, in order.
    assert cut
    resumed = [
        part.id
        async for part in client.runs.join_stream(thread_id, run["run_id"], last_event_id=cut[-1])
    ]
    every = [part.id for part in parts]
    assert cut + resumed == every
    assert every == sorted(every, key=event_position)
    await any_client.aclose()
    await client.aclose()


async def test_redeploy_with_runs_in_flight_then_roll_back(cluster: Cluster, demo: Path) -> None:
    first, second = cluster.start(), cluster.start()
    assert cluster.deploy(demo, first).exit_code == 0
    await serving(second, 1)
    client = cluster.client(second)
    thread = await client.threads.create()
    in_flight = await client.runs.create(
        thread["thread_id"], "demo", input=user("@sleep 2 @say {system}")
    )
    await eventually(lambda: _is(client, thread["thread_id"], in_flight["run_id"], "running"), 20)

    (demo / "AGENTS.md").write_text("You are the second revision.\n")
    result = cluster.deploy(demo, first)
    assert result.exit_code == 0, result.err
    assert "Deployed revision 2" in result.out
    await serving(second, 2)

    old = await client.runs.join(thread["thread_id"], in_flight["run_id"])
    assert "You are the demo agent." in answer(old)  # finished on the revision it began on
    for replica in (first, second):
        fresh = cluster.client(replica)
        now = await fresh.runs.wait(None, "demo", input=user("@say {system}"))
        assert "You are the second revision." in answer(now)
        await fresh.aclose()

    listed = cluster.deploy(demo, first, "revisions")
    assert listed.exit_code == 0
    assert "*    2" in listed.out
    assert "     1" in listed.out
    assert re.search(r"  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC  ", listed.out), listed.out
    missing = cluster.deploy(demo, first, "rollback", "9")
    assert missing.exit_code == 1
    assert "error: agent 'demo' has no revision 9 — `agentctl revisions --agent demo`" in (
        missing.err
    )
    rolled = cluster.deploy(demo, first, "rollback")
    assert rolled.exit_code == 0, rolled.err
    assert "Revision 1 of agent demo is active" in rolled.out
    await serving(second, 1)
    assert (await info(first))["revision_number"] == 1
    back = await client.runs.wait(None, "demo", input=user("@say {system}"))
    assert "You are the demo agent." in answer(back)
    await client.aclose()


async def test_the_platform_refuses_a_wrong_key_and_a_missing_package(
    cluster: Cluster, demo: Path
) -> None:
    replica = cluster.start()
    wrong = cluster.deploy(demo, replica, key="not-the-key")
    assert wrong.exit_code == 1
    assert "refused PLATFORM_API_KEY" in wrong.err
    assert "Traceback" not in wrong.err
    async with httpx.AsyncClient(base_url=replica.url) as http:
        refused = await http.get("/platform/revisions", headers={"x-api-key": "nope"})
        anonymous = await http.post("/threads", json={})
    assert refused.status_code == 401
    assert anonymous.status_code == 401

    toml = demo / "agent.toml"
    toml.write_text(toml.read_text().replace("openai:scripted", "cohere:command-r"))
    (demo / ".env").write_text("COHERE_API_KEY=co-test-0123456789\n")
    missing = cluster.deploy(demo, replica)
    assert missing.exit_code == 1
    assert "pip install 'langchain-cohere>=0.6,<1'" in missing.err
    assert (await info(replica))["agents"] == []  # a refused first deploy makes no agent


async def test_sigterm_lets_runs_in_flight_finish(cluster: Cluster, demo: Path) -> None:
    replica = cluster.start()
    assert cluster.deploy(demo, replica).exit_code == 0
    client = cluster.client(replica)
    thread = await client.threads.create()
    run = await client.runs.create(thread["thread_id"], "demo", input=user("@sleep 1.5 @say bye"))
    await eventually(lambda: _is(client, thread["thread_id"], run["run_id"], "running"), 20)
    await client.aclose()
    assert await asyncio.to_thread(replica.terminate) == 0
    with cluster.connect() as conn:
        row = conn.execute("SELECT status FROM runs WHERE run_id = %s", (run["run_id"],))
        assert row.fetchone() == ("success",)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_sigterm_past_the_grace_says_what_becomes_of_the_run(
    cluster: Cluster, tmp_path: Path, backend: str
) -> None:
    sqlite = {"DATABASE_URL": "", "REDIS_URL": ""} if backend == "sqlite" else {}
    replica = cluster.start(AGENTCTL_SHUTDOWN_GRACE_SECONDS="0.5", **sqlite)
    assert cluster.deploy(agent_project(tmp_path / "slow", "slow"), replica).exit_code == 0
    client = cluster.client(replica)
    thread = await client.threads.create()
    stream: Any = client.runs.stream(
        thread["thread_id"], "slow", input=user("@sleep 20 @say late"), stream_mode="values"
    )
    first = await anext(stream)  # the run's metadata: it is under way
    began = asyncio.get_running_loop().time()
    assert await asyncio.to_thread(replica.terminate) == 0
    assert asyncio.get_running_loop().time() - began < 5  # the stream did not hold it
    await stream.aclose()
    await client.aclose()
    log = replica.output()
    said = {
        "sqlite": "1 unfinished run was stopped; it resumes from its last checkpoint the next "
        "time the server starts",
        "postgres": "1 unfinished run was handed back; another replica (or this one, started "
        "again) resumes it from its last checkpoint",
    }
    assert said[backend] in log
    for noise in ("Traceback", "CancelledError", "other replicas", "dropped"):
        assert noise not in log
    if backend == "postgres":
        with cluster.connect("slow") as conn:
            row = conn.execute("SELECT status FROM runs WHERE run_id = %s", (first.data["run_id"],))
            assert row.fetchone() == ("pending",)


async def _is(client: Any, thread_id: str, run_id: str, status: str) -> bool:
    return await run_status(client, thread_id, run_id) == status


async def _true(value: bool) -> bool:
    return value


async def test_user_memory_survives_a_redeploy(
    cluster: Cluster, demo: Path, tmp_path: Path, idp_b: IdpBServer
) -> None:
    project = with_auth(demo, tmp_path / "signed-in", {"provider": "idp_b"}, idp_b.env)
    first, second = cluster.start(), cluster.start()
    assert cluster.deploy(project, first).exit_code == 0
    await serving(second, 1)
    alice = cluster.client(first, api_key=None, headers=bearer(idp_b.mint(ALICE)))
    thread_id = str(uuid.uuid4())
    await alice.runs.wait(
        thread_id, "demo", input=user(remember("drinks green tea")), if_not_exists="create"
    )

    (project / "user" / "AGENTS.md").write_text("# About the user (new template)\n")
    assert cluster.deploy(project, first).exit_code == 0
    await serving(second, 2)
    again = cluster.client(second, api_key=None, headers=bearer(idp_b.mint(ALICE)))
    values = await again.runs.wait(None, "demo", input=user("@say {system}"))
    assert "drinks green tea" in answer(values)
    assert "new template" not in answer(values)
    bob = cluster.client(second, api_key=None, headers=bearer(idp_b.mint(BOB)))
    fresh = await bob.runs.wait(None, "demo", input=user("@say {system}"))
    assert "new template" in answer(fresh)  # a new user is seeded from the new template
    assert "green tea" not in answer(fresh)
    for client in (alice, again, bob):
        await client.aclose()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_serve_without_a_database_url_runs_on_sqlite(cluster: Cluster, demo: Path) -> None:
    sqlite = {"DATABASE_URL": "", "REDIS_URL": ""}
    replica = cluster.start(**sqlite)
    assert (await info(replica))["storage"] == "sqlite"
    assert cluster.deploy(demo, replica).exit_code == 0
    client = cluster.client(replica)
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], "demo", input=user("@say kept"))
    await client.aclose()
    assert await asyncio.to_thread(replica.terminate) == 0

    # The same data folder: the deployed revision and the thread are still there.
    again = start_replica({**cluster.env, **sqlite}, replica.data_dir)
    cluster.replicas.append(again)
    assert (await info(again))["revision_number"] == 1
    client = cluster.client(again)
    state = await client.threads.get_state(thread["thread_id"])
    assert answer(state["values"]) == "kept"
    await client.aclose()


async def test_a_thread_stream_on_one_replica_carries_a_run_on_another(
    cluster: Cluster, demo: Path
) -> None:
    """The thread-centric protocol across replicas: a run started through one replica's
    command channel and executed by whichever replica claims it is seen whole, token by
    token, by SSE and WebSocket clients of the other replica."""
    cluster.start()
    cluster.start()
    assert cluster.deploy(demo, cluster.replicas[0]).exit_code == 0
    await serving(cluster.replicas[1], 1)
    words = " ".join(f"w{i}" for i in range(40))
    key = {"x-api-key": KEY}  # a WebSocket carries the stream's own headers only
    starter = cluster.client(cluster.replicas[0])
    async with starter.threads.stream(assistant_id="demo", headers=key) as thread:
        run_id = (await thread.run.start(input=user(f"@slow 0.05 @say {words}")))["run_id"]
    await eventually(lambda: _is(starter, thread.thread_id, run_id, "running"), 20)
    _, other = cluster.executing(run_id)  # not the replica executing the run
    watcher = cluster.client(other)
    for transport in ("sse", "websocket"):
        async with watcher.threads.stream(
            thread.thread_id, assistant_id="demo", transport=transport, headers=key
        ) as joined:
            async with asyncio.timeout(30):
                messages = [message async for message in joined.messages]
            assert [await message.text for message in messages] == [words], transport
    assert await run_status(starter, thread.thread_id, run_id) == "success"
    await starter.aclose()
    await watcher.aclose()
