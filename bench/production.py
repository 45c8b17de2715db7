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
   stops when a run on every replica answers with the new instructions (`--deploys` times).
4. The platform: both replicas restart with `AGENTCTL_DB_POOL_SIZE=--pool-size` (each agent
   has a pool per replica, deployment.md "Scaling": 10 agents x 2 replicas x 3 stays under
   PostgreSQL's default 100 connections); deploy-to-live of the demo agent alone,
   then `--agents` - 1 more agents are deployed (each live on both replicas) and one of them
   is measured. PostgreSQL connections to the benchmark's database and the first replica's
   RSS are taken with one agent and with all of them.

PostgreSQL and Redis: `DATABASE_URL` / `REDIS_URL` when they answer, else throwaway servers
(`agentctl.testing.services`); the benchmark uses a database and key prefix of its own.

    .venv/bin/python bench/production.py [--runs 600] [--latency-runs 200] [--concurrency 16]
        [--deploys 5] [--agents 10] [--pool-size 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from cluster import Cluster, deploy, serve_env
from common import p95, running_fixtures
from platform_agents import add_agents, connections, deploy_to_live, replica_rss, seconds

from agentctl.testing import services
from agentctl.testing.demo import write_demo


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

        print(f"deploy to live, 1 agent: {args.deploys} deploys", flush=True)
        loaded = await deploy_to_live(cluster, project, env, "/agents/demo", args.deploys)

        print(f"the platform, pool size {args.pool_size}: 1 agent", flush=True)
        cluster.restart({**env, "AGENTCTL_DB_POOL_SIZE": str(args.pool_size)})
        one_agent = await deploy_to_live(cluster, project, env, "/agents/demo", args.deploys)
        rss_one, connections_one = replica_rss(cluster.replicas[0]), connections(database)
        print(f"the platform: {args.agents - 1} more agents", flush=True)
        projects = await add_agents(cluster, tmp / "agents", facts, env, args.agents - 1)
        target = projects[len(projects) // 2] if projects else project
        many = await deploy_to_live(cluster, target, env, f"/agents/{target.name}", args.deploys)
        rss_many, connections_many = replica_rss(cluster.replicas[0]), connections(database)
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
    print("  deploy to live on both replicas (target < 5 s)")
    print(seconds("1 agent, after the load above", *loaded))
    print(f"  the platform: both replicas restarted, AGENTCTL_DB_POOL_SIZE={args.pool_size}")
    print(seconds("  deploy to live, 1 agent", *one_agent))
    print(seconds(f"  deploy to live, {args.agents} agents", *many))
    print(f"    PostgreSQL connections              1 agent {connections_one:4d}"
          f"       {args.agents} agents {connections_many:4d}")  # fmt: skip
    print(f"    RSS of a replica                    1 agent {rss_one:4.0f} MiB"
          f"   {args.agents} agents {rss_many:4.0f} MiB")  # fmt: skip
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
    parser.add_argument("--deploys", type=int, default=5, help="deploys per deploy-to-live row")
    parser.add_argument("--agents", type=int, default=10, help="agents on the platform")
    parser.add_argument("--pool-size", type=int, default=3, help="of the platform replicas")
    asyncio.run(main(parser.parse_args()))
