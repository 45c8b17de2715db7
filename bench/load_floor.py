"""The `floor` target of bench/load.py: the same load on the agent itself, in process.

N users run the demo deep agent's graph directly (`astream` with the `updates` and
`messages` modes, an in-memory checkpointer and store, no HTTP, no records, no event log)
against the same scripted model, back to back on fresh threads for `--seconds`. Prints, as
one JSON line, what bench/load.py prints for a server: the run times, the gaps between
tokens, the tokens lost, the errors and this process's CPU seconds. What a server spends
per run beyond this is its own cost.

    python bench/load_floor.py PROJECT --users N --seconds S --script S --tokens T
    # with the scripted model's environment set
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
import uuid
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from agentctl.project import load_project
from agentctl.runtime import load_agent
from agentctl.runtime.memory import USER_ID_KEY


def is_token(chunk: Any, metadata: dict[str, Any]) -> bool:
    """A token of the main graph's answer (not a subagent's)."""
    content = getattr(chunk, "content", None)
    return (
        type(chunk).__name__ == "AIMessageChunk"
        and isinstance(content, str)
        and bool(content)
        and not metadata.get("checkpoint_ns", "").count("|")
    )


async def measure(
    project: Path, users: int, seconds: float, script: str, expected: int
) -> dict[str, Any]:
    agent = await load_agent(
        load_project(project), "floor", store=InMemoryStore(), checkpointer=InMemorySaver()
    )
    graph = agent.graph
    run_times: list[float] = []
    gaps: list[float] = []
    errors: list[str] = []
    lost = 0

    async def one_run() -> None:
        nonlocal lost
        config = {"configurable": {"thread_id": str(uuid.uuid4()), USER_ID_KEY: "floor"}}
        tokens, last = 0, None
        started = time.perf_counter()
        try:
            async for mode, chunk in graph.astream(
                {"messages": [{"role": "user", "content": script}]},
                config,
                stream_mode=["updates", "messages"],
            ):
                if mode == "messages" and is_token(*chunk):
                    now = time.perf_counter()
                    tokens += 1
                    if last is not None:
                        gaps.append(now - last)
                    last = now
            run_times.append(time.perf_counter() - started)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}"[:300])
        finally:
            lost += max(0, expected - tokens)

    await one_run()  # warm-up
    idle_rss = _rss_mib()
    run_times.clear()
    gaps.clear()
    lost = 0
    deadline = time.perf_counter() + seconds

    async def user() -> None:
        while time.perf_counter() < deadline:
            await one_run()

    cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(user() for _ in range(users)))
    return {
        "run_times": run_times,
        "gaps": gaps,
        "tokens_lost": lost,
        "errors": errors,
        "elapsed": time.perf_counter() - started,
        "cpu": time.process_time() - cpu,
        "idle_rss_mib": idle_rss,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _rss_mib() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / (1024 * 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--users", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--script", required=True)
    parser.add_argument("--tokens", type=int, required=True, help="of each run's answer")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.project, args.users, args.seconds, args.script, args.tokens))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
