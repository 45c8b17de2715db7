"""PostgreSQL and Redis stopped and started again under streamed runs on two replicas, with
one agent served at the platform's root and with two agents each at its own URL: every run
ends `success`, every client gets every event once, requests made while a service is down
get 503 with `Retry-After` (the agents' and the platform's own), never a 500, and once it is
back each agent takes deploys and answers on every replica."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from agentctl.testing import ScriptedModelServer, services
from agentctl.testing.outages import (
    OutageReport,
    in_thread,
    outage_under_runs,
    platform_agents,
)
from tests.conftest import RunCli
from tests.production.conftest import (
    KEY,
    MODEL_KEY,
    Cluster,
    agent_project,
    agent_serving,
    said,
)

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
