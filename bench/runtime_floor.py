"""The in-process floor: the demo deep agent with the scripted model, no HTTP server.

Prints the latency (p50/p95) of one-turn runs, sequential, and the throughput sequential and
at N concurrent runs. The agent server is measured against these figures.

    python bench/runtime_floor.py [--runs 300] [--concurrency 16] [--checkpointer memory|sqlite]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from common import one_run

from agentctl.project import load_project
from agentctl.runtime import load_agent
from agentctl.testing import ScriptedModelServer
from agentctl.testing.demo import write_demo
from agentctl.testing.mcp_servers import calculator, library, serve


async def measure(graph: Any, runs: int, concurrency: int) -> dict[str, float]:
    for warmup in range(20):
        await one_run(graph, -1 - warmup)
    latencies = [await one_run(graph, i) for i in range(runs)]
    started, cpu_started = time.perf_counter(), time.process_time()
    for i in range(runs):
        await one_run(graph, runs + i)
    sequential = runs / (time.perf_counter() - started)
    cpu_ms_per_run = (time.process_time() - cpu_started) * 1000 / runs
    gate = asyncio.Semaphore(concurrency)

    async def bounded(i: int) -> float:
        async with gate:
            return await one_run(graph, 2 * runs + i)

    started = time.perf_counter()
    await asyncio.gather(*(bounded(i) for i in range(runs)))
    concurrent = runs / (time.perf_counter() - started)
    quantiles = statistics.quantiles(latencies, n=100)
    return {
        "p50_ms": statistics.median(latencies) * 1000,
        "p95_ms": quantiles[94] * 1000,
        "sequential_runs_per_s": sequential,
        "cpu_ms_per_run": cpu_ms_per_run,
        "concurrent_runs_per_s": concurrent,
    }


async def main(runs: int, concurrency: int, checkpointer_kind: str) -> None:
    from langgraph.store.memory import InMemoryStore

    with (
        ScriptedModelServer() as model,
        serve(calculator().streamable_http_app()) as calc,
        serve(library().sse_app()) as lib,
        tempfile.TemporaryDirectory() as tmp,
    ):
        os.environ.update(model.env)
        root = write_demo(
            Path(tmp) / "demo", f"http://127.0.0.1:{calc}/mcp", f"http://127.0.0.1:{lib}/sse"
        )
        if checkpointer_kind == "sqlite":
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            async with AsyncSqliteSaver.from_conn_string(str(Path(tmp) / "bench.db")) as saver:
                agent = await load_agent(
                    load_project(root), "bench", store=InMemoryStore(), checkpointer=saver
                )
                figures = await measure(agent.graph, runs, concurrency)
        else:
            from langgraph.checkpoint.memory import InMemorySaver

            agent = await load_agent(
                load_project(root), "bench", store=InMemoryStore(), checkpointer=InMemorySaver()
            )
            figures = await measure(agent.graph, runs, concurrency)
    print(f"demo deep agent, scripted model, in process, checkpointer={checkpointer_kind}")
    print(f"  runs per measurement      {runs}")
    print(f"  sequential p50 latency    {figures['p50_ms']:.1f} ms")
    print(f"  sequential p95 latency    {figures['p95_ms']:.1f} ms")
    print(f"  sequential throughput     {figures['sequential_runs_per_s']:.1f} runs/s")
    print(f"  CPU per sequential run    {figures['cpu_ms_per_run']:.1f} ms")
    print(f"  throughput, {concurrency} concurrent  {figures['concurrent_runs_per_s']:.1f} runs/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--checkpointer", choices=["memory", "sqlite"], default="memory")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.concurrency, args.checkpointer))
