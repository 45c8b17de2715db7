"""`agentctl serve` on PostgreSQL + Redis: throughput with 1 and 2 replicas, latency, and
the seconds from `agentctl deploy` to the new revision answering on every replica.

The demo deep agent (agentctl.testing.demo) with the scripted model, as in
`bench/server_vs_langgraph_dev.py` (the harness of bench/targets.py): one-turn streamed runs
(`stream_mode="values"`) on fresh threads, driven by the official `langgraph-sdk` client.

1. One replica: `--latency-runs` sequential runs (p50/p95), then `--runs` at `--concurrency`
   concurrent streams (throughput).
2. A second replica joins; the same concurrent load is spread over both, alternating (as a
   round-robin load balancer would).
3. Deploy-to-live: AGENTS.md changes, `agentctl deploy` runs as a user runs it, and the clock
   stops when a run on every replica answers with the new instructions.

PostgreSQL and Redis: `DATABASE_URL` / `REDIS_URL` when they answer, else throwaway servers
(`agentctl.testing.services`); the benchmark uses a database and key prefix of its own.

    .venv/bin/python bench/production.py [--runs 600] [--latency-runs 200] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from cluster import KEY, Cluster, deploy, serve_env
from common import p95, running_fixtures, user_input

from agentctl.testing import services
from agentctl.testing.demo import write_demo
from agentctl.testing.replicas import Replica


async def answers_with(replica: Replica, text: str) -> bool:
    async with httpx.AsyncClient(base_url=replica.url, headers={"x-api-key": KEY}) as http:
        body = {"assistant_id": "demo", "input": user_input("@say {system}")}
        response = await http.post("/runs/wait", json=body, timeout=30)
        return response.status_code == 200 and text in json.dumps(response.json())


async def measure(args: argparse.Namespace, facts: dict[str, Any], tmp: Path) -> None:
    database = services.fresh_database(services.postgres_url())
    env = {**serve_env(facts, database), "AGENTCTL_MAX_RUNS": str(args.concurrency)}
    project = write_demo(tmp / "demo", facts["calculator"], facts["library"])
    cluster = Cluster(env, tmp / "replicas")
    try:
        first = cluster.start()
        deploy(project, first.url, env)
        await cluster.connect(first)
        harness = cluster.harnesses[0]
        for i in range(20):
            await harness.fresh_run(-1 - i)
        print(f"1 replica: {args.latency_runs} sequential runs", flush=True)
        samples = [await harness.fresh_run(i) for i in range(args.latency_runs)]
        latencies = [s.latency * 1000 for s in samples]
        print(f"1 replica: {args.runs} runs, {args.concurrency} concurrent", flush=True)
        one, one_p50 = await cluster.concurrent(args.runs, args.concurrency, 10_000)

        second = cluster.start()
        await cluster.connect(second)
        await cluster.concurrent(args.concurrency, args.concurrency, -1000)  # warm-up
        print(f"2 replicas: {args.runs} runs, {args.concurrency} concurrent", flush=True)
        two, two_p50 = await cluster.concurrent(args.runs, args.concurrency, 20_000)

        (project / "AGENTS.md").write_text("You are the redeployed demo agent.\n")
        started = time.perf_counter()
        deploy(project, first.url, env)
        deployed = time.perf_counter() - started
        for replica in cluster.replicas:
            while not await answers_with(replica, "redeployed demo agent"):
                await asyncio.sleep(0.05)
        live = time.perf_counter() - started
    finally:
        for h in cluster.harnesses:
            await h.client.aclose()
        cluster.stop()
        services.drop_database(database)

    print()
    print("agentctl serve on PostgreSQL + Redis (demo agent, scripted model, same machine)")
    print(f"  sequential latency, 1 replica      p50 {statistics.median(latencies):6.1f} ms"
          f"   p95 {p95(latencies):6.1f} ms")  # fmt: skip
    print(f"  throughput, {args.concurrency} streams, 1 replica  {one:6.1f} runs/s"
          f"   (p50 under load {one_p50 * 1000:.0f} ms)")  # fmt: skip
    print(f"  throughput, {args.concurrency} streams, 2 replicas {two:6.1f} runs/s"
          f"   (p50 under load {two_p50 * 1000:.0f} ms)")  # fmt: skip
    print(f"  deploy to live on both replicas    {live:6.2f} s"
          f"   (agentctl deploy itself: {deployed:.2f} s; target < 5 s)")  # fmt: skip
    cores = os.cpu_count()
    print(f"  ({cores} cores shared by client, model, replicas, PostgreSQL and Redis)")


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="agentctl-bench-prod-") as name:
        tmp = Path(name)
        with running_fixtures(tmp) as facts:
            await measure(args, facts, tmp)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--latency-runs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    asyncio.run(main(parser.parse_args()))
