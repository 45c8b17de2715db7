"""What a checkpoint save costs `agentctl serve` on PostgreSQL, one at a time and many at once.

The server's checkpointer (`storage/postgres/checkpointer.py`) sends the saves its runs make
while earlier ones are under way together, in one pipeline on one connection. This measures
`--tasks` tasks, each making `--saves` saves of a task's pending writes (`aput_writes`, as
a run's steps do) one after the other: with one task every save goes alone, with many they
go together. Prints this process's CPU time and the wall time per save for each, best of
`--repeats`. A fresh database on `DATABASE_URL` (or a throwaway server), dropped at the end.

    .venv/bin/python bench/checkpoint_saves.py [--tasks 32] [--saves 40] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

from agentctl.storage.postgres.checkpointer import PoolPostgresSaver
from agentctl.storage.postgres.database import open_pool
from agentctl.testing import services

WRITES = [("messages", [{"type": "ai", "content": "x" * 200}]), ("files", {"/plan.md": "1."})]


async def one_task(saver: PoolPostgresSaver, saves: int) -> None:
    thread_id = str(uuid.uuid4())
    for index in range(saves):
        configurable = {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": str(index)}
        await saver.aput_writes({"configurable": configurable}, WRITES, f"task-{index}")


async def measure(saver: PoolPostgresSaver, tasks: int, saves: int) -> tuple[float, float]:
    """(CPU µs, wall µs) per save of `tasks` tasks saving at once."""
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one_task(saver, saves) for _ in range(tasks)))
    count = tasks * saves
    return (
        (time.process_time() - cpu) / count * 1e6,
        (time.perf_counter() - wall) / count * 1e6,
    )


async def main(args: argparse.Namespace) -> None:
    database = services.fresh_database(services.postgres_url())
    try:
        pool = await open_pool(database, size=20)
        try:
            saver = PoolPostgresSaver(pool)
            await saver.setup()
            await one_task(saver, args.saves)  # warm-up: connections, prepared statements
            print(f"checkpoint saves on PostgreSQL ({args.saves} per task), best of "
                  f"{args.repeats}")  # fmt: skip
            for tasks in (1, args.tasks):
                figures = [await measure(saver, tasks, args.saves) for _ in range(args.repeats)]
                cpu, wall = (min(figure[i] for figure in figures) for i in range(2))
                print(f"  {tasks:>3} tasks at once: CPU {cpu:4.0f} µs/save, "
                      f"wall {wall:4.0f} µs/save")  # fmt: skip
        finally:
            await pool.close()
    finally:
        services.drop_database(database)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--saves", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
