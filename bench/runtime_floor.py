"""The in-process floor: the demo deep agent with the scripted model, no HTTP server.

Prints the latency (p50/p95) of one-turn runs, sequential, and the throughput sequential and
at N concurrent runs. The agent server is measured against these figures.

    python bench/runtime_floor.py [--runs 300] [--concurrency 16] [--checkpointer memory|sqlite]
                                  [--trace]

`--trace` measures it twice in one process: tracing off, then exporting every span (a
`chat` span per model call, under a `run` span per run) over OTLP/HTTP to a local receiver.
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

from common import OtlpSink, one_run

from agentctl.project import load_project
from agentctl.runtime import load_agent
from agentctl.testing import ScriptedModelServer
from agentctl.testing.demo import write_demo
from agentctl.testing.mcp_servers import calculator, library, serve


async def traced_run(graph: Any, index: int) -> float:
    """One run inside a `run` span, as the engine executes it."""
    from agentctl.observability.tracing import run_span
    from agentctl.storage.base import Run

    with run_span(Run(f"run-{index}", f"bench-{index}", "demo"), "demo"):
        return await one_run(graph, index)


async def measure(graph: Any, runs: int, concurrency: int) -> dict[str, float]:
    for warmup in range(20):
        await traced_run(graph, -1 - warmup)
    latencies = [await traced_run(graph, i) for i in range(runs)]
    started, cpu_started = time.perf_counter(), time.process_time()
    for i in range(runs):
        await traced_run(graph, runs + i)
    sequential = runs / (time.perf_counter() - started)
    cpu_ms_per_run = (time.process_time() - cpu_started) * 1000 / runs
    gate = asyncio.Semaphore(concurrency)

    async def bounded(i: int) -> float:
        async with gate:
            return await traced_run(graph, 2 * runs + i)

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


def report(title: str, figures: dict[str, float], runs: int, concurrency: int) -> None:
    print(title)
    print(f"  runs per measurement      {runs}")
    print(f"  sequential p50 latency    {figures['p50_ms']:.1f} ms")
    print(f"  sequential p95 latency    {figures['p95_ms']:.1f} ms")
    print(f"  sequential throughput     {figures['sequential_runs_per_s']:.1f} runs/s")
    print(f"  CPU per sequential run    {figures['cpu_ms_per_run']:.1f} ms")
    print(f"  throughput, {concurrency} concurrent  {figures['concurrent_runs_per_s']:.1f} runs/s")


async def traced(graph: Any, runs: int, concurrency: int) -> None:
    """The same measurement with tracing off, then exporting to a local OTLP receiver."""
    from agentctl.observability.tracing import configure_tracing, shutdown_tracing

    off = await measure(graph, runs, concurrency)
    sink = OtlpSink()
    configure_tracing(sink.url, "bench")
    try:
        on = await measure(graph, runs, concurrency)
    finally:
        await asyncio.to_thread(shutdown_tracing)
        sink.close()
    report("tracing off", off, runs, concurrency)
    report(f"tracing on (OTLP/HTTP to {sink.url}: {sink.batches} batches, "
           f"{sink.bytes / 1024:.0f} KiB)", on, runs, concurrency)  # fmt: skip
    extra = (on["cpu_ms_per_run"] / off["cpu_ms_per_run"] - 1) * 100
    print(f"CPU per run with tracing: {extra:+.1f} %")


async def main(runs: int, concurrency: int, checkpointer_kind: str, trace: bool = False) -> None:
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
            if trace:
                await traced(agent.graph, runs, concurrency)
                return
            figures = await measure(agent.graph, runs, concurrency)
    title = f"demo deep agent, scripted model, in process, checkpointer={checkpointer_kind}"
    report(title, figures, runs, concurrency)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--checkpointer", choices=["memory", "sqlite"], default="memory")
    parser.add_argument("--trace", action="store_true", help="off, then exporting over OTLP")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.concurrency, args.checkpointer, args.trace))
