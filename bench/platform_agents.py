"""Deploy-to-live on a replicated platform, with one agent or many: `agentctl deploy` of a
new revision until a run on every replica answers with its instructions, and what the
platform holds meanwhile (PostgreSQL connections, a replica's RSS)."""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from cluster import KEY, Cluster, deploy
from common import p95, rss_mib, serving_pid, user_input

from agentctl.testing.demo import write_demo
from agentctl.testing.replicas import Replica


async def answers_with(replica: Replica, agent: str, base: str, text: str) -> bool:
    """A run of `agent` (its graph id is its name) at `base` on `replica` says `text`."""
    async with httpx.AsyncClient(base_url=replica.url + base, headers={"x-api-key": KEY}) as http:
        body = {"assistant_id": agent, "input": user_input("@say {system}")}
        response = await http.post("/runs/wait", json=body, timeout=30)
        return response.status_code == 200 and text in json.dumps(response.json())


async def live_everywhere(cluster: Cluster, agent: str, base: str, text: str) -> None:
    for replica in cluster.replicas:
        while not await answers_with(replica, agent, base, text):
            await asyncio.sleep(0.05)


async def deploy_to_live(
    cluster: Cluster, project: Path, env: dict[str, str], base: str, times: int
) -> tuple[list[float], list[float]]:
    """Deploy `project` `times` times, each with new instructions: (seconds until live on
    every replica, seconds `agentctl deploy` itself took), one of each per deploy."""
    agent = project.name
    live, deploys = [], []
    for _ in range(times):
        marker = f"{agent} revision mark {time.time_ns()}."
        (project / "AGENTS.md").write_text(f"You are {marker}\n")
        started = time.perf_counter()
        deploy(project, cluster.replicas[0].url, env)
        deploys.append(time.perf_counter() - started)
        await live_everywhere(cluster, agent, base, marker)
        live.append(time.perf_counter() - started)
    return live, deploys


def agent_project(folder: Path, name: str, facts: dict[str, Any]) -> Path:
    """The demo project as agent `name` (the folder is named after it too)."""
    project = write_demo(folder / name, facts["calculator"], facts["library"])
    toml = project / "agent.toml"
    toml.write_text(toml.read_text().replace('name = "demo"', f'name = "{name}"'))
    return project


async def add_agents(
    cluster: Cluster, folder: Path, facts: dict[str, Any], env: dict[str, str], count: int
) -> list[Path]:
    """Deploy `count` more agents, each live on every replica before the next."""
    projects = []
    for i in range(count):
        project = agent_project(folder, f"agent-{i + 1:02d}", facts)
        deploy(project, cluster.replicas[0].url, env)
        await live_everywhere(cluster, project.name, f"/agents/{project.name}", "You are")
        projects.append(project)
    return projects


def connections(database: str) -> int:
    """Connections to `database` but this one: the replicas' pools (and their listeners)."""
    with psycopg.connect(database) as conn:
        query = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0]) - 1


def replica_rss(replica: Replica) -> float:
    port = int(replica.url.rsplit(":", 1)[1])
    return rss_mib(serving_pid(replica.process.pid, port))


def seconds(label: str, live: list[float], deploys: list[float]) -> str:
    return (
        f"  {label:<38} p50 {statistics.median(live):5.2f} s   p95 {p95(live):5.2f} s"
        f"   (agentctl deploy itself p50 {statistics.median(deploys):.2f} s; n={len(live)})"
    )
