"""What the embedded store's writes cost one run: the statements a run makes on SQLite, in the
order the engine makes them, without the graph.

One run: create its thread and the run (each committed at once), claim it, mark the thread
busy, append `--events` events, record its end and settle the thread, make that durable
(`Storage.sync`, before the client hears `end`), append the end event. Prints the CPU time
(this process) and wall time per run, and the part of it that the commit before the end
takes, sequential and with `--concurrency` runs interleaved on the loop; each figure is the
best of `--repeats` batches, as the machine may be shared.

With `--streaming N`, it measures instead N runs at once that stream as the load benchmark's
do: each appends its `metadata`, then `--tokens` token events (`messages`, with the metadata
langgraph gives a token) `--gap` seconds apart, an `updates` event and its end, one run
after another for `--seconds`. Prints the CPU time per run and the bytes this process wrote
to disk per run (the database, its WAL and temporary files).

    python bench/embedded_writes.py [--runs 300] [--events 20] [--concurrency 16]
        [--repeats 9]
    python bench/embedded_writes.py --streaming 32 [--tokens 60] [--gap 0.025] [--seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

from agentctl import serde
from agentctl.storage.base import Run, Thread, ThreadUpdate, now
from agentctl.storage.sqlite import SqliteStorage

EVENT = b'{"messages": [{"type": "ai", "content": "one two three"}]}'


SYNC = [0.0]  # seconds spent in `Storage.sync`


@contextlib.asynccontextmanager
async def a_run(storage: SqliteStorage) -> AsyncIterator[tuple[str, str]]:
    """A new thread and run, with what the engine writes before and after a run's events:
    the run created and claimed, the thread busy; then the run finished, the thread idle,
    the end committed (timed in SYNC) and appended. Yields (thread_id, run_id)."""
    thread_id, run_id = str(uuid.uuid4()), str(uuid.uuid4())
    await storage.threads.create(Thread(thread_id))
    await storage.runs.create(Run(run_id=run_id, thread_id=thread_id, assistant_id="bench"))
    await storage.runs.claim(now(), worker="bench", lease=30.0)
    await storage.threads.update(thread_id, ThreadUpdate(status="busy"))
    yield thread_id, run_id
    await storage.runs.finish(run_id, "success")
    await storage.threads.update(thread_id, ThreadUpdate(status="idle"))
    started = time.perf_counter()
    await storage.sync()
    SYNC[0] += time.perf_counter() - started
    await storage.events.append(thread_id, run_id, "__end__", b"{}")


async def one_run(storage: SqliteStorage, events: int) -> None:
    async with a_run(storage) as (thread_id, run_id):
        for _ in range(events):
            await storage.events.append(thread_id, run_id, "values", EVENT)
            await asyncio.sleep(0)  # a run yields between events: other runs' writes interleave


TOKEN_METADATA = {
    "ls_integration": "langchain_chat_model",
    "lc_agent_name": "demo",
    "lc_versions": {"deepagents": "0.7", "langchain-core": "1.8", "langchain": "1.5"},
    "assistant_id": "fcb1d0d2-a4d7-5bb4-b10a-57c00fdcb684",
    "graph_id": "demo",
    "langgraph_step": 6,
    "langgraph_node": "model",
    "langgraph_triggers": ["branch:to:model"],
    "langgraph_path": ["__pregel_pull", "model"],
    "langgraph_checkpoint_ns": "model:131a5d8c-0106-4f1d-fb40-99034eed01b7",
    "checkpoint_ns": "model:131a5d8c-0106-4f1d-fb40-99034eed01b7",
    "ls_provider": "openai",
    "ls_model_name": "scripted",
    "ls_model_type": "chat",
}


def token(thread_id: str, run_id: str, index: int) -> bytes:
    chunk = {
        "content": f" word{index:02d}",
        "additional_kwargs": {},
        "response_metadata": {"model_provider": "openai"},
        "type": "AIMessageChunk",
        "id": f"lc_run--{run_id}",
        "tool_calls": [],
        "invalid_tool_calls": [],
        "tool_call_chunks": [],
    }
    metadata = {**TOKEN_METADATA, "thread_id": thread_id, "run_id": run_id}
    return serde.dumps([chunk, metadata])  # as the engine publishes it


async def streaming_run(storage: SqliteStorage, tokens: int, gap: float) -> None:
    async with a_run(storage) as (thread_id, run_id):
        metadata = b'{"run_id": "r", "attempt": 1}'
        await storage.events.append(thread_id, run_id, "metadata", metadata)
        for index in range(tokens):
            await asyncio.sleep(gap)
            data = token(thread_id, run_id, index)
            await storage.events.append(thread_id, run_id, "messages", data)
        await storage.events.append(thread_id, run_id, "updates", EVENT)


def written_bytes() -> int:
    """What this process has written to disk so far."""
    io = Path("/proc/self/io").read_text()
    return int(re.search(r"^wchar: (\d+)", io, re.M).group(1))  # type: ignore[union-attr]


async def streaming(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="agentctl-bench-") as folder:
        storage = SqliteStorage(Path(folder) / "agentctl.db", Path(folder) / "store.db",
                                fold_after=0)  # fmt: skip  # as `agentctl dev` by default
        try:
            await streaming_run(storage, args.tokens, 0)  # warm-up
            done = 0
            deadline = time.perf_counter() + args.seconds

            async def user() -> None:
                nonlocal done
                while time.perf_counter() < deadline:
                    await streaming_run(storage, args.tokens, args.gap)
                    done += 1

            cpu, wrote = time.process_time(), written_bytes()
            await asyncio.gather(*(user() for _ in range(args.streaming)))
            cpu, wrote = time.process_time() - cpu, written_bytes() - wrote
            cpu_ms, kib = cpu / done * 1000, wrote / done / 1024
            print(f"embedded store, {args.streaming} runs streaming {args.tokens} tokens "
                  f"{args.gap * 1000:.0f} ms apart for {args.seconds:.0f} s: {done} runs, "
                  f"CPU {cpu_ms:.2f} ms/run, wrote {kib:.0f} KiB/run")  # fmt: skip
        finally:
            await storage.close()


async def batch(
    storage: SqliteStorage, runs: int, events: int, concurrency: int
) -> tuple[float, float, float]:
    """(CPU µs, wall µs, µs in the commit before the end) per run of `runs` runs,
    `concurrency` at a time."""
    SYNC[0] = 0.0
    cpu, wall = time.process_time(), time.perf_counter()
    for start in range(0, runs, concurrency):
        count = min(concurrency, runs - start)
        await asyncio.gather(*(one_run(storage, events) for _ in range(count)))
    return (
        (time.process_time() - cpu) / runs * 1e6,
        (time.perf_counter() - wall) / runs * 1e6,
        SYNC[0] / runs * 1e6,
    )


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="agentctl-bench-") as folder:
        storage = SqliteStorage(Path(folder) / "agentctl.db", Path(folder) / "store.db")
        try:
            await batch(storage, 50, args.events, 1)  # warm-up
            print(f"embedded store, one run's writes ({args.events} events), best of "
                  f"{args.repeats} batches of {args.runs} runs")  # fmt: skip
            for concurrency in (1, args.concurrency):
                figures = [
                    await batch(storage, args.runs, args.events, concurrency)
                    for _ in range(args.repeats)
                ]
                cpu, wall, sync = (min(figure[i] for figure in figures) for i in range(3))
                print(f"  {concurrency:>3} at a time: CPU {cpu:5.0f} µs/run, wall {wall:5.0f} "
                      f"µs/run, of which the commit before the end {sync:4.0f} µs")  # fmt: skip
        finally:
            await storage.close()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--streaming", type=int, default=0, help="runs streaming at once")
    parser.add_argument("--tokens", type=int, default=60)
    parser.add_argument("--gap", type=float, default=0.025, help="seconds between tokens")
    parser.add_argument("--seconds", type=float, default=20)
    return parser.parse_args()


if __name__ == "__main__":
    arguments = parse_args()
    asyncio.run(streaming(arguments) if arguments.streaming else main(arguments))
