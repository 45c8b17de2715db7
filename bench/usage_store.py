"""What storing a run's usage and trace adds to its end, and what the usage API's sums cost.

    python bench/usage_store.py [--runs 2000] [--postgres postgresql://127.0.0.1:5432/postgres]

For each backend (SQLite in a temporary folder; PostgreSQL in a fresh schema when
`--postgres` is given): the time of `runs.finish` without a ledger, and with a ledger of two
models and 12 steps (the run's usage, two usage rows, its trace, priced, in one
transaction); then `usage.summary` per day, user, model and thread over the `runs` runs,
and `usage.spent` of one user. Printed as microseconds per call (median of the calls).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agentctl.metering import prices
from agentctl.metering.ledger import Ledger, Tokens
from agentctl.storage.base import Run, Storage, Thread, new_id
from agentctl.storage.sqlite import SqliteStorage


def ledger_of(run: Run, user: str) -> Ledger:
    ledger = Ledger(run.run_id, run.thread_id, "bench", user_id=user)
    for _ in range(3):
        with ledger.step("model", "openai:gpt-4o-mini") as step:
            ledger.count("openai:gpt-4o-mini", Tokens(1200, 150, 300), step)
        with ledger.step("subagent", "researcher"):
            with ledger.step("model", "anthropic:claude-sonnet-4-5") as inner:
                ledger.count("anthropic:claude-sonnet-4-5", Tokens(800, 90), inner)
            with ledger.step("mcp", "library/lookup"):
                pass
    return ledger


async def timed(calls: int, make: Callable[[int], Awaitable[object]]) -> float:
    """The median microseconds of `calls` calls."""
    took = []
    for number in range(calls):
        start = time.perf_counter()
        await make(number)
        took.append(time.perf_counter() - start)
    return statistics.median(took) * 1e6


async def measure(name: str, storage: Storage, runs: int) -> None:
    thread = Thread(new_id())
    await storage.threads.create(thread)
    made = []
    for number in range(2 * runs):
        run = Run(new_id(), thread.thread_id, "bench", kwargs={"user_id": f"u{number % 10}"})
        await storage.runs.create(run)
        made.append(run)
    plain = await timed(runs, lambda n: storage.runs.finish(made[n].run_id, "success"))
    ledgers = [ledger_of(run, f"u{n % 10}") for n, run in enumerate(made)]
    metered = await timed(
        runs,
        lambda n: storage.runs.finish(made[runs + n].run_id, "success", usage=ledgers[runs + n]),
    )
    print(f"{name}: runs.finish {plain:.0f} µs without usage, {metered:.0f} µs with it "
          f"(+{metered - plain:.0f} µs per run)")  # fmt: skip
    today = datetime.now(UTC).date()
    since = today - timedelta(days=29)
    for group in ("day", "user", "model", "thread", None):
        took = await timed(20, lambda _, g=group: storage.usage.summary(g, since, today))
        print(f"{name}: usage.summary({group}) over {runs} runs: {took:.0f} µs")
    after = datetime.now(UTC) - timedelta(days=1)
    took = await timed(50, lambda _: storage.usage.spent_on_budgets("u3", after))
    print(f"{name}: usage.spent_on_budgets(one user, a day): {took:.0f} µs")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--postgres", default=None)
    args = parser.parse_args()
    await asyncio.to_thread(prices.current)
    with tempfile.TemporaryDirectory() as folder:
        sqlite = SqliteStorage(Path(folder) / "a.db", Path(folder) / "s.db")
        try:
            await measure("sqlite", sqlite, args.runs)
        finally:
            await sqlite.close()
    if args.postgres:
        from agentctl.storage.bus import LocalBus
        from agentctl.storage.postgres import PostgresStorage
        from agentctl.storage.postgres.database import drop_schema

        schema = f"bench_{uuid.uuid4().hex[:8]}"
        with tempfile.TemporaryDirectory() as folder:
            events_db = SqliteStorage(Path(folder) / "e.db", Path(folder) / "es.db")
            postgres = await PostgresStorage.open(
                args.postgres, events=events_db.events, bus=LocalBus(), schema=schema
            )
            try:
                await measure("postgres", postgres, args.runs)
            finally:
                await postgres.close()
                await events_db.close()
                await drop_schema(args.postgres, schema)


if __name__ == "__main__":
    asyncio.run(main())
