"""`agentctl serve` replicas for the benchmarks: their environment on PostgreSQL + Redis, a
cluster of them driven through the harness, and `agentctl deploy` to one of them."""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import QUIET_ENV
from langgraph_sdk import get_client
from targets import Harness

from agentctl.testing import services
from agentctl.testing.replicas import Replica, start_replica

KEY = "bench-deployment-key-0123456789abcdef"


class Cluster:
    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env = env
        self.folder = folder
        self.replicas: list[Replica] = []
        self.harnesses: list[Harness] = []

    def start(self) -> Replica:
        replica = start_replica(self.env, self.folder / f"replica-{len(self.replicas)}")
        self.replicas.append(replica)
        return replica

    async def connect(self, replica: Replica) -> None:
        client = get_client(url=replica.url, api_key=KEY)
        self.harnesses.append(Harness(client, "demo", None))

    async def concurrent(self, count: int, concurrency: int, first: int) -> tuple[float, float]:
        """`count` runs, `concurrency` at a time, alternating over the replicas: (runs/s,
        p50 latency s). Threads are created before the clock starts."""
        harnesses = [self.harnesses[i % len(self.harnesses)] for i in range(count)]
        threads = [await h.thread() for h in harnesses]
        gate = asyncio.Semaphore(concurrency)

        async def bounded(i: int) -> float:
            async with gate:
                return (await harnesses[i].checked_run(threads[i], first + i)).latency

        started = time.perf_counter()
        latencies = await asyncio.gather(*(bounded(i) for i in range(count)))
        return count / (time.perf_counter() - started), statistics.median(latencies)

    def stop(self) -> None:
        for replica in self.replicas:
            if replica.alive:
                replica.terminate(30)

    def restart(self, env: dict[str, str]) -> None:
        """Stop every replica and start as many again with `env` (their clients are kept,
        closed by the caller, and no longer connect)."""
        count = len(self.replicas)
        self.stop()
        self.env, self.replicas = env, []
        for _ in range(count):
            self.start()


def deploy(project: Path, url: str, env: dict[str, str]) -> None:
    command = [sys.executable, "-m", "agentctl", "deploy"]
    env = {**env, "PLATFORM_URL": url, "PLATFORM_API_KEY": KEY}
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"agentctl deploy failed:\n{done.stdout}\n{done.stderr}")


def serve_env(facts: dict[str, Any], database: str) -> dict[str, str]:
    """The environment of `agentctl serve` replicas on `database` (from
    `services.fresh_database`), the shared Redis under a fresh prefix, and the model of
    `facts` (`running_fixtures`), with tracing off."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH")},
        **QUIET_ENV,
        **facts["env"],
        "DATABASE_URL": database,
        "REDIS_URL": services.redis_url(),
        "AGENTCTL_REDIS_PREFIX": services.fresh_prefix(),
        "PLATFORM_API_KEY": KEY,
    }
