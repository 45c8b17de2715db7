"""PostgreSQL and Redis stopped and started again under streamed runs, and what clients saw.

Two `agentctl serve` replicas on a throwaway PostgreSQL and a throwaway Redis of their own
(`agentctl.testing.services`), the scripted model, and `--runs` streamed runs each joined by
a second client on the other replica (`agentctl.testing.outages`). For each service: it is
stopped while the runs cross step boundaries (Redis killed with SIGKILL, PostgreSQL by a
fast shutdown, as a restart does), started again `--seconds` later, and the figures are
printed: runs not ending `success`, events a client missed or got twice, the statuses the
API and `/ok` answered while it was down and after, and how long after its return the last
run ended.

    .venv/bin/python bench/outages.py [--runs 10] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from agentctl.testing import ScriptedModelServer, services
from agentctl.testing.outages import OutageReport, in_thread, outage_under_runs
from agentctl.testing.replicas import start_replica

KEY = "bench-deployment-key-0123456789abcdef"


async def scenario(
    name: str, args: argparse.Namespace, folder: Path, model: ScriptedModelServer
) -> OutageReport:
    postgres, redis = services.ThrowawayPostgres(), services.ThrowawayRedis()
    postgres.start()
    redis.start()
    env = {
        **os.environ,
        **model.env,
        "OPENAI_API_KEY": "sk-scripted",
        "DATABASE_URL": services.fresh_database(postgres.url),
        "REDIS_URL": redis.url,
        "PLATFORM_API_KEY": KEY,
        "AGENTCTL_LOG_LEVEL": "warning",
    }
    replicas = [start_replica(env, folder / name / f"replica-{i}") for i in range(2)]
    try:
        project = folder / name / "waiter"
        project.mkdir()
        (project / "agent.toml").write_text('[agent]\nname = "waiter"\nmodel = "openai:scripted"\n')
        (project / "AGENTS.md").write_text("You wait.\n")
        deployed = subprocess.run(
            [sys.executable, "-m", "agentctl", "deploy"],
            cwd=project,
            env={**env, "PLATFORM_URL": replicas[0].url},
            capture_output=True,
            text=True,
        )
        if deployed.returncode != 0:
            raise RuntimeError(f"agentctl deploy failed:\n{deployed.stderr}")
        stop: Callable[[], Awaitable[None]]
        if name == "Redis":
            stop = lambda: in_thread(lambda: redis.stop(signal.SIGKILL))  # noqa: E731
            start = lambda: in_thread(redis.start)  # noqa: E731
        else:
            stop = lambda: in_thread(postgres.stop)  # noqa: E731
            start = lambda: in_thread(postgres.start)  # noqa: E731
        urls = [replica.url for replica in replicas]
        return await outage_under_runs(
            urls,
            KEY,
            {"waiter": urls},  # the platform's only agent, at its root
            stop,
            start,
            runs=args.runs,
            down_seconds=args.seconds,
            timeout=args.timeout,
        )
    finally:
        for replica in replicas:
            if replica.alive:
                replica.kill()
        postgres.remove()
        redis.remove()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="streamed runs (default 10)")
    parser.add_argument(
        "--seconds", type=float, default=5.0, help="how long each service is down (default 5)"
    )
    parser.add_argument(
        "--timeout", type=float, default=90.0, help="how long clients may wait (default 90)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentctl-outages-") as tmp:
        model = ScriptedModelServer()
        model.start()
        try:
            for name in ("Redis", "PostgreSQL"):
                print(
                    f"{name} down {args.seconds:g} s under {args.runs} streamed runs:", flush=True
                )
                report = await scenario(name, args, Path(tmp), model)
                for line in report.lines()[:-1]:  # the timeline is for debugging
                    print(f"  {line}", flush=True)
        finally:
            model.stop()


if __name__ == "__main__":
    asyncio.run(main())
