"""What the embedded store's writes cost one run: the statements a run makes on SQLite, in the
order the engine makes them, without the graph.

One run: create its thread and the run (each committed at once), claim it, mark the thread
busy, append `--events` events, record its end and settle the thread, make that durable
(`Storage.sync`, before the client hears `end`), append the end event. Prints the CPU time
(this process) and wall time per run, and the part of it that the commit before the end
takes, sequential and with `--concurrency` runs interleaved on the loop; each figure is the
best of `--repeats` batches, as the machine may be shared.

    python bench/embedded_writes.py [--runs 300] [--events 20] [--concurrency 16]
        [--repeats 9]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from agentctl.storage.base import Run, Thread, ThreadUpdate, now
from agentctl.storage.sqlite import SqliteStorage

EVENT = b'{"messages": [{"type": "ai", "content": "one two three"}]}'


SYNC = [0.0]  # seconds spent in `Storage.sync`


async def one_run(storage: SqliteStorage, events: int) -> None:
    thread_id, run_id = str(uuid.uuid4()), str(uuid.uuid4())
    await storage.threads.create(Thread(thread_id))
    run = Run(run_id=run_id, thread_id=thread_id, assistant_id="bench")
    await storage.runs.create(run)
    await storage.runs.claim(now(), worker="bench", lease=30.0)
    await storage.threads.update(thread_id, ThreadUpdate(status="busy"))
    for _ in range(events):
        await storage.events.append(thread_id, run_id, "values", EVENT)
        await asyncio.sleep(0)  # a run yields between events: other runs' writes interleave
    await storage.runs.finish(run_id, "success")
    await storage.threads.update(thread_id, ThreadUpdate(status="idle"))
    started = time.perf_counter()
    await storage.sync()
    SYNC[0] += time.perf_counter() - started
    await storage.events.append(thread_id, run_id, "__end__", b"{}")


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
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
