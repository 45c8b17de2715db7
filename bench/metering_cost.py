"""What metering costs a run: the demo deep agent in process (no HTTP server), each run a
subagent (`task`) and two MCP calls over five model calls, with a ledger bound to it (as the
engine binds one to every run), without, and bare (no ledger, and the models without their
`Unmetered` callback); CPU per run, measured in alternating blocks.

    python bench/metering_cost.py [--runs 150] [--blocks 4]
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

from agentctl.metering import ledger as ledgers
from agentctl.metering.ledger import Ledger
from agentctl.project import load_project
from agentctl.runtime import agent as agents
from agentctl.runtime import load_agent
from agentctl.runtime.models import create_models
from agentctl.testing import ScriptedModelServer
from agentctl.testing.demo import write_demo
from agentctl.testing.mcp_servers import calculator, library, serve

RESEARCH = '@call lookup {"topic": "tea"}\n@say researched: {last_tool_result}'
SCRIPT = "\n".join(
    [
        "@call task " + json.dumps({"subagent_type": "researcher", "description": RESEARCH}),
        '@call add {"a": 2, "b": 3}',
        "@say sum {last_tool_result}",
    ]
)


async def one_run(graph: Any, index: int, metered: bool) -> Ledger | None:
    """One run, with a ledger bound (in its own task, as the engine binds it) or not."""

    async def run() -> Ledger | None:
        ledger = Ledger(f"run-{index}", f"thread-{index}", "demo") if metered else None
        ledgers.current.set(ledger)
        config = {"configurable": {"thread_id": f"bench-{index}"}}
        await graph.ainvoke({"messages": [{"role": "user", "content": SCRIPT}]}, config)
        return ledger

    return await asyncio.create_task(run())


async def cpu_per_run(graph: Any, runs: int, start: int, metered: bool) -> float:
    began = time.process_time()
    for i in range(runs):
        await one_run(graph, start + i, metered)
    return (time.process_time() - began) * 1000 / runs


async def cpu_bare(graph: Any, models: list[Any], runs: int, start: int) -> float:
    """`cpu_per_run` unmetered, with the models' callbacks taken off meanwhile."""
    kept = [model.callbacks for model in models]
    for model in models:
        model.callbacks = None
    try:
        return await cpu_per_run(graph, runs, start, False)
    finally:
        for model, callbacks in zip(models, kept, strict=True):
            model.callbacks = callbacks


async def main(runs: int, blocks: int) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
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
        models: list[Any] = []

        def kept(*args: Any) -> dict[str, Any]:
            created = create_models(*args)
            models.extend(created.values())
            return created

        agents.create_models = kept  # to take their callbacks off for the bare runs
        agent = await load_agent(
            load_project(root), "bench", store=InMemoryStore(), checkpointer=InMemorySaver()
        )
        ledger = await one_run(agent.graph, -1, True)
        if ledger is None or ledger.totals().calls != 5:
            raise SystemExit(f"the metered run did not count its 5 model calls: {ledger}")
        for warmup in range(10):
            await one_run(agent.graph, -2 - warmup, warmup % 2 == 0)
        bare: list[float] = []
        off: list[float] = []
        on: list[float] = []
        index = 0
        for _ in range(blocks):
            bare.append(await cpu_bare(agent.graph, models, runs, index))
            index += runs
            for metered, figures in ((False, off), (True, on)):
                figures.append(await cpu_per_run(agent.graph, runs, index, metered))
                index += runs
    nothing = statistics.median(bare)
    plain, metered = statistics.median(off), statistics.median(on)
    print("demo deep agent in process: a subagent, 2 MCP calls, 5 model calls per run")
    print(f"  runs per block, blocks    {runs}, {blocks} of each")
    print(f"  CPU per run, bare         {nothing:.1f} ms  (blocks: {_list(bare)})")
    print(f"  CPU per run, no ledger    {plain:.1f} ms  (blocks: {_list(off)})")
    print(f"  CPU per run, metered      {metered:.1f} ms  (blocks: {_list(on)})")
    print(f"  no ledger vs bare         {100 * (plain - nothing) / nothing:+.1f} %")
    print(f"  metered vs bare           {100 * (metered - nothing) / nothing:+.1f} %")


def _list(values: list[float]) -> str:
    return ", ".join(f"{value:.1f}" for value in values)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=150)
    parser.add_argument("--blocks", type=int, default=4)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.blocks))
