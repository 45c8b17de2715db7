"""PostgreSQL and Redis stopped and started again under streamed runs on two replicas, with
one agent served at the platform's root and with two agents each at its own URL: every run
ends `success`, every client gets every event once, requests made while a service is down
get 503 with `Retry-After` (the agents' and the platform's own), never a 500, and once it is
back each agent takes deploys and answers on every replica."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import StreamPart

from agentctl.testing import ScriptedModelServer, services
from agentctl.testing.outages import (
    OutageReport,
    in_thread,
    outage_under_runs,
    platform_agents,
    stored_ids,
)
from tests.conftest import RunCli, eventually
from tests.production.conftest import (
    KEY,
    MODEL_KEY,
    Cluster,
    agent_project,
    agent_serving,
    said,
    serving,
)
from tests.server.conftest import user

ONE, TWO = ["waiter"], ["waiter", "second"]


@pytest.fixture
def own_postgres() -> Iterator[services.ThrowawayPostgres]:
    server = services.ThrowawayPostgres()
    server.start()
    yield server
    server.remove()


@pytest.fixture
def own_redis() -> Iterator[services.ThrowawayRedis]:
    server = services.ThrowawayRedis()
    server.start()
    yield server
    server.remove()


@pytest.fixture(params=[ONE, TWO], ids=["one agent at the root", "two agents"])
def agents(request: pytest.FixtureRequest) -> list[str]:
    names: list[str] = request.param
    return names


@pytest.fixture
def outage_cluster(
    agents: list[str],
    own_postgres: services.ThrowawayPostgres,
    own_redis: services.ThrowawayRedis,
    model_server: ScriptedModelServer,
    run_cli: RunCli,
    tmp_path: Path,
) -> Iterator[Cluster]:
    """Two replicas serving `agents`, deployed with `agentctl deploy`."""
    env = {
        "DATABASE_URL": services.fresh_database(own_postgres.url),
        "REDIS_URL": own_redis.url,
        "PLATFORM_API_KEY": KEY,
        "AGENTCTL_LEASE_SECONDS": "3",
        **model_server.env,
        "OPENAI_API_KEY": MODEL_KEY,
    }
    cluster = Cluster(env, tmp_path / "replicas", run_cli)
    cluster.start()
    cluster.start()
    for name in agents:
        deployed = cluster.deploy(agent_project(tmp_path / name, name), cluster.replicas[0])
        assert deployed.exit_code == 0, deployed.err + deployed.out
    yield cluster
    for replica in cluster.replicas:
        if replica.alive:
            replica.kill()


def served(cluster: Cluster, agents: list[str]) -> dict[str, list[str]]:
    """Each agent's base URL on each replica: the root for the platform's only agent."""
    urls = [replica.url for replica in cluster.replicas]
    return {agents[0]: urls} if len(agents) == 1 else platform_agents(urls, agents)


async def runs_through(
    cluster: Cluster,
    agents: list[str],
    outage: Callable[[], Awaitable[None]],
    restore: Callable[[], Awaitable[None]],
    **options: float,
) -> OutageReport:
    """`outage_under_runs` on the cluster: six runs in all, shared by the agents."""
    report = await outage_under_runs(
        [replica.url for replica in cluster.replicas],
        KEY,
        served(cluster, agents),
        outage,
        restore,
        runs=6 // len(agents),
        **options,
    )
    print("\n".join(report.lines()))
    return report


def assert_survived(report: OutageReport) -> None:
    text = "\n".join(report.lines())
    assert not report.failed, text
    assert report.missing == 0, text
    assert report.duplicated == 0, text
    assert not report.problems, text
    assert 500 not in report.during, text
    assert 500 not in report.after, text
    assert set(report.ok_during) == {503}, text


async def answers(base: str, name: str) -> None:
    async with get_client(url=base, api_key=KEY) as client:
        assert await said(client, name, f"{name} at {base}") == f"{name} at {base}"


async def assert_serving_again(cluster: Cluster, agents: list[str], tmp_path: Path) -> None:
    """Every agent answers on every replica; a new revision of the last agent and a new
    agent, deployed each through one replica, are served by both, and the first agent
    still answers. No replica logged a traceback, then or during the outage."""
    for name, bases in served(cluster, agents).items():
        for base in bases:
            await answers(base, name)
    first, other = cluster.replicas
    changed = agent_project(tmp_path / agents[-1], agents[-1])
    (changed / "AGENTS.md").write_text("You are back.\n")
    deployed = cluster.deploy(changed, first)
    assert deployed.exit_code == 0, deployed.err + deployed.out
    created = cluster.deploy(agent_project(tmp_path / "later", "later"), other)
    assert created.exit_code == 0, created.err + created.out
    urls = [replica.url for replica in cluster.replicas]
    for replica in cluster.replicas:
        await agent_serving(replica, agents[-1], 2)
        await agent_serving(replica, "later", 1)
    for base in platform_agents(urls, agents[:1])[agents[0]]:
        await answers(base, agents[0])
    for replica in cluster.replicas:
        assert "Traceback" not in replica.output(), replica.output()[-4000:]


async def test_runs_survive_a_redis_restart(
    outage_cluster: Cluster, agents: list[str], own_redis: services.ThrowawayRedis, tmp_path: Path
) -> None:
    report = await runs_through(
        outage_cluster,
        agents,
        outage=lambda: in_thread(lambda: own_redis.stop(signal.SIGKILL)),
        restore=lambda: in_thread(own_redis.start),
    )
    assert_survived(report)
    text = "\n".join(report.lines())
    assert set(report.during) == {200}, text  # reading a thread needs no Redis
    assert {path: set(counts) for path, counts in report.platform_during.items()} == {
        "/ok": {503}, "/platform/agents": {200}, "/metrics": {200}}, text  # fmt: skip
    await assert_serving_again(outage_cluster, agents, tmp_path)


async def test_runs_survive_a_postgres_restart(
    outage_cluster: Cluster,
    agents: list[str],
    own_postgres: services.ThrowawayPostgres,
    tmp_path: Path,
) -> None:
    report = await runs_through(
        outage_cluster,
        agents,
        outage=lambda: in_thread(own_postgres.stop),
        restore=lambda: in_thread(own_postgres.start),
        down_seconds=6.0,
    )
    assert_survived(report)
    text = "\n".join(report.lines())
    assert set(report.during) == {503}, text
    assert report.retry_after == {"2"}, text
    assert set(report.after) == {200}, text
    assert {path: set(counts) for path, counts in report.platform_during.items()} == {
        "/ok": {503}, "/platform/agents": {503}, "/metrics": {503}}, text  # fmt: skip
    assert set(report.platform_after) == {200}, text
    await assert_serving_again(outage_cluster, agents, tmp_path)


# A run streaming when Redis goes, which goes on streaming once it is back: a tool call at
# once, then (its answer waiting for Redis) a slow answer.
LONG_SCRIPT = "\n".join(
    ['@call write_file {"file_path": "/a.txt", "content": "a"}',
     "@sleep 2 @slow 0.1 @say one two three four five six"]
)  # fmt: skip
REDIS_DOWN_SECONDS = 12.0  # longer than any wait of a reader of the event log (10 s)


@pytest.mark.parametrize("agents", [ONE], indirect=True, ids=["one agent"])
async def test_a_long_redis_outage_is_logged_once_and_keeps_every_stream_open(
    outage_cluster: Cluster, own_redis: services.ThrowawayRedis
) -> None:
    """Redis down longer than any read timeout under streamed runs on two replicas, with
    joins from before the outage and from during it, a thread stream and a run started
    during it: each replica logs one warning when Redis goes, one when it is back and no
    traceback; no stream is cut (the SDK never sends a request again); once Redis is back
    every run ends `success` and every client gets each of its events once."""
    replicas = outage_cluster.replicas
    for replica in replicas:
        await serving(replica, 1)
    stream_requests: list[tuple[str, str]] = []  # (path, Last-Event-ID) of each stream asked

    async def note(request: httpx.Request) -> None:
        if request.url.path.endswith("/stream"):
            stream_requests.append((request.url.path, request.headers.get("last-event-id", "")))

    clients = [outage_cluster.client(replica, timeout=120) for replica in replicas]
    for client in clients:
        client.http.client.event_hooks["request"].append(note)
    got: dict[str, list[StreamPart]] = {}  # what each stream got so far, by name

    async def collect(name: str, parts: AsyncIterator[StreamPart]) -> None:
        got[name] = []
        async for part in parts:
            got[name].append(part)

    def stream(name: str, client: LangGraphClient, thread_id: str) -> asyncio.Task[None]:
        parts = client.runs.stream(
            thread_id, "waiter", input=user(LONG_SCRIPT), stream_mode=["values", "updates"]
        )
        return asyncio.create_task(collect(name, parts))

    threads = [(await clients[0].threads.create())["thread_id"] for _ in range(3)]
    watched = await clients[1].threads.join_stream(threads[0], last_event_id="-")
    thread_stream = asyncio.create_task(collect("thread stream", watched))
    tasks = [stream(f"run {i}", clients[i % 2], t) for i, t in enumerate(threads)]

    async def running() -> list[Any]:
        runs = [(await clients[0].runs.list(thread_id))[:1] for thread_id in threads]
        started = [run[0] for run in runs if run and run[0]["status"] == "running"]
        return started if len(started) == len(threads) else []

    runs = [(r["thread_id"], r["run_id"]) for r in await eventually(running, 30, "the runs")]
    for i, (thread_id, run_id) in enumerate(runs):  # each on the other replica
        parts = clients[(i + 1) % 2].runs.join_stream(thread_id, run_id, last_event_id="-")
        tasks.append(asyncio.create_task(collect(f"join {i} before", parts)))
    await asyncio.sleep(0.5)
    logged = [len(replica.log) for replica in replicas]
    await in_thread(lambda: own_redis.stop(signal.SIGKILL))
    await asyncio.sleep(1.0)
    for i, (thread_id, run_id) in enumerate(runs):
        parts = clients[i % 2].runs.join_stream(thread_id, run_id, last_event_id="-")
        tasks.append(asyncio.create_task(collect(f"join {i} during", parts)))
    late = (await clients[1].threads.create())["thread_id"]
    tasks.append(stream("run started during", clients[1], late))
    await asyncio.sleep(REDIS_DOWN_SECONDS - 1.0)
    assert not [task for task in [thread_stream, *tasks] if task.done()], got
    await in_thread(own_redis.start)
    async with asyncio.timeout(60):
        await asyncio.gather(*tasks)

        async def thread_stream_ended_its_run() -> bool:
            return any(part.data.get("status") == "run_done" for part in got["thread stream"])

        await eventually(thread_stream_ended_its_run, 30, "the thread stream's run_done")
    thread_stream.cancel()

    # No stream was asked twice: the SDK resumes a cut stream with its last event's id.
    assert len(stream_requests) == len(tasks) + 1, stream_requests
    assert {last for _, last in stream_requests} <= {"", "-"}, stream_requests
    for replica, start in zip(replicas, logged, strict=True):
        records = [json.loads(line) for line in replica.log[start:] if line.startswith("{")]
        warnings = [r["message"] for r in records if r["level"] in ("warning", "error")]
        assert [m.split(" (")[0].split(" after")[0] for m in warnings] == [
            "Redis is unavailable", "Redis is back"], "\n".join(warnings)  # fmt: skip
        assert "Traceback" not in replica.output(), replica.output()[-4000:]
    late_run = (await clients[0].runs.list(late))[0]
    for thread_id, run_id in [*runs, (late, late_run["run_id"])]:
        assert (await clients[0].runs.get(thread_id, run_id))["status"] == "success"
    stored = {run_id: await stored_ids(clients[0], thread_id, run_id) for thread_id, run_id in runs}
    stored[late_run["run_id"]] = await stored_ids(clients[0], late, late_run["run_id"])
    by_stream = {f"run {i}": run_id for i, (_, run_id) in enumerate(runs)}
    by_stream |= {f"join {i} {when}": run_id for i, (_, run_id) in enumerate(runs)
                  for when in ("before", "during")}  # fmt: skip
    by_stream |= {"run started during": late_run["run_id"], "thread stream": runs[0][1]}
    for name, run_id in by_stream.items():
        ids = [part.id for part in got[name] if part.id]
        assert sorted(ids) == sorted(set(ids)), f"{name} got an event twice: {ids}"
        assert set(ids) == set(stored[run_id]), f"{name}: {ids} != {stored[run_id]}"
    for client in clients:
        await client.aclose()
