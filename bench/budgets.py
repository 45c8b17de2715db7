"""What holding runs to budgets costs when a run starts (`metering/budgets.py`), on a usage
table of a busy agent: by default 200,000 usage rows over 30 days from 2,000 users.

    python bench/budgets.py                                   # the embedded SQLite database
    python bench/budgets.py --database-url postgresql://…     # PostgreSQL (and --redis-url)

For each case, the time of one start's check (`BudgetChecker.admit`, then `started`), mean
and p95 over `--checks` starts of random users: no budget at all; daily token and cost
budgets of the user and the agent, read from the database each time (another replica's
view) and reused within the cache's 2 s; and runs per minute of the user and the agent (two
reads and a write per start).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import p95

from agentctl.engine.budgets import budget_checker
from agentctl.metering.budgets import BudgetChecker
from agentctl.project.model import Budgets
from agentctl.settings import Settings
from agentctl.storage.base import Storage
from agentctl.storage.namespace import Namespace
from agentctl.storage.open import open_storage

COLUMNS = (
    "run_id, model, thread_id, assistant_id, agent, user_id, day, at, input_tokens, "
    "output_tokens, cached_tokens, model_calls, cost_usd"
)
HIGH = 10**12  # limits never reached: every check reads and passes


def usage_rows(rows: int, users: int, days: int) -> list[tuple[object, ...]]:
    now = datetime.now(UTC)
    made = []
    for n in range(rows):
        at = now - timedelta(seconds=random.uniform(0, days * 86400))
        user = f"user-{random.randrange(users)}"
        made.append(
            (f"run-{n}", "openai:gpt-4o-mini", f"thread-{n % 5000}", "a", "bench", user,
             at.date().isoformat(), at, 2000, 300, 0, 2, 0.0012)
        )  # fmt: skip
    return made


async def fill(storage: Storage, rows: list[tuple[object, ...]]) -> None:
    if storage.kind == "sqlite":
        conn = storage.conn  # type: ignore[attr-defined]
        marks = ", ".join("?" * 13)
        data = [(*row[:7], row[7].isoformat(), *row[8:]) for row in rows]  # type: ignore[attr-defined]
        conn.executemany(f"INSERT INTO usage ({COLUMNS}) VALUES ({marks})", data)
        conn.commit()
        return
    async with storage.pool.connection() as conn:  # type: ignore[attr-defined]
        async with conn.cursor() as cursor:
            marks = ", ".join(["%s"] * 13)
            await cursor.executemany(f"INSERT INTO usage ({COLUMNS}) VALUES ({marks})", rows)
        await conn.execute("VACUUM ANALYZE usage")  # as autovacuum leaves it


async def timed(check: Callable[[], Awaitable[None]], times: int) -> list[float]:
    took = []
    for _ in range(times):
        began = time.perf_counter()
        await check()
        took.append((time.perf_counter() - began) * 1e6)
    return took


async def bench(storage: Storage, users: int, checks: int) -> None:
    def start(
        checker: BudgetChecker, budgets: Budgets, forget: bool
    ) -> Callable[[], Awaitable[None]]:
        async def check() -> None:
            user = f"user-{random.randrange(users)}"
            if forget:
                checker._cache.clear()  # another replica's view: no reuse
            await checker.admit(budgets, "bench", user)
            await checker.started(budgets, user)  # the run created: its start noted

        return check

    daily = Budgets(user_tokens_per_day=HIGH, user_cost_per_day=HIGH,
                    agent_tokens_per_day=HIGH, agent_cost_per_day=HIGH)  # fmt: skip
    per_minute = Budgets(user_runs_per_minute=HIGH, agent_runs_per_minute=HIGH)
    cases = [
        ("no budget", Budgets(), False),
        ("daily tokens and cost, user and agent, read each time", daily, True),
        ("daily tokens and cost, user and agent, cached reads", daily, False),
        ("runs per minute, user and agent", per_minute, False),
    ]
    print(f"{'case':<58} {'mean µs':>9} {'p95 µs':>9}")
    for name, budgets, forget in cases:
        checker = budget_checker(storage)
        await timed(start(checker, budgets, forget), min(50, checks))  # warm up
        took = await timed(start(checker, budgets, forget), checks)
        print(f"{name:<58} {statistics.mean(took):>9.1f} {p95(took):>9.1f}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--checks", type=int, default=500)
    args = parser.parse_args()
    namespace = f"bench_budgets_{os.getpid()}"
    random.seed(7)
    with tempfile.TemporaryDirectory() as folder:
        env = {"PLATFORM_API_KEY": "bench", "AGENTCTL_DATA_DIR": folder}
        if args.database_url:
            env |= {"DATABASE_URL": args.database_url, "REDIS_URL": args.redis_url,
                    "AGENTCTL_REDIS_PREFIX": namespace}  # fmt: skip
        storage, close = await open_storage(Settings.from_env(env), namespace)
        try:
            await fill(storage, usage_rows(args.rows, args.users, args.days))
            print(f"{storage.kind}: {args.rows:,} usage rows, {args.users:,} users, "
                  f"{args.days} days; {args.checks} run starts per case")  # fmt: skip
            await bench(storage, args.users, args.checks)
        finally:
            if storage.kind == "postgres":
                async with storage.pool.connection() as conn:  # type: ignore[attr-defined]
                    schema = Namespace.of(namespace).schema
                    await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            await storage.close()
            await close()


if __name__ == "__main__":
    asyncio.run(main())
