"""PostgreSQL and Redis stopped and started again under streamed runs on two replicas:
every run ends `success`, every client gets every event once, and requests made while a
service is down get 503 with `Retry-After`, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentctl.testing import ScriptedModelServer, services
from agentctl.testing.outages import OutageReport, in_thread, outage_under_runs
from tests.conftest import RunCli
from tests.production.conftest import KEY, MODEL_KEY, Cluster


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


@pytest.fixture
def outage_cluster(
    own_postgres: services.ThrowawayPostgres,
    own_redis: services.ThrowawayRedis,
    model_server: ScriptedModelServer,
    run_cli: RunCli,
    tmp_path: Path,
) -> Iterator[Cluster]:
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
    project = tmp_path / "waiter"
    project.mkdir()
    (project / "agent.toml").write_text('[agent]\nname = "waiter"\nmodel = "openai:scripted"\n')
    (project / "AGENTS.md").write_text("You wait.\n")
    deployed = cluster.deploy(project, cluster.replicas[0])
    assert deployed.exit_code == 0, deployed.err + deployed.out
    yield cluster
    for replica in cluster.replicas:
        if replica.alive:
            replica.kill()


def assert_survived(report: OutageReport, cluster: Cluster) -> None:
    text = "\n".join(report.lines())
    assert not report.failed, text
    assert report.missing == 0, text
    assert report.duplicated == 0, text
    assert not report.problems, text
    assert 500 not in report.during, text
    assert 500 not in report.after, text
    for replica in cluster.replicas:
        assert "Traceback" not in replica.output(), replica.output()[-4000:]


async def test_runs_survive_a_redis_restart(
    outage_cluster: Cluster, own_redis: services.ThrowawayRedis
) -> None:
    import signal

    report = await outage_under_runs(
        [replica.url for replica in outage_cluster.replicas],
        KEY,
        "waiter",
        outage=lambda: in_thread(lambda: own_redis.stop(signal.SIGKILL)),
        restore=lambda: in_thread(own_redis.start),
    )
    print("\n".join(report.lines()))
    assert_survived(report, outage_cluster)
    assert report.ok_during[503], report.lines()


async def test_runs_survive_a_postgres_restart(
    outage_cluster: Cluster, own_postgres: services.ThrowawayPostgres
) -> None:
    report = await outage_under_runs(
        [replica.url for replica in outage_cluster.replicas],
        KEY,
        "waiter",
        outage=lambda: in_thread(own_postgres.stop),
        restore=lambda: in_thread(own_postgres.start),
        down_seconds=6.0,
    )
    print("\n".join(report.lines()))
    assert_survived(report, outage_cluster)
    assert set(report.during) <= {200, 503}, report.lines()
    assert 503 in report.during, report.lines()
    assert report.retry_after == {"2"}, report.lines()
    assert set(report.after) == {200}, report.lines()
    assert report.ok_during[503], report.lines()
