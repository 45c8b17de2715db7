"""What runs spent, on every backend: a run's end stores its usage (on the run, a row per
model kept after the run and its thread are deleted) and its trace (deleted with the run),
in the same transaction and under the same fence; the usage API's sums read them back."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from agentctl.metering import prices
from agentctl.metering.ledger import Ledger, Tokens
from agentctl.storage.base import Run, Storage, UsageRow, new_id, now
from agentctl.storage.fence import Fence, StaleAttempt
from agentctl.storage.postgres import database as postgres_database
from agentctl.storage.sqlite import SqliteStorage
from agentctl.storage.sqlite import database as sqlite_database

from .conftest import postgres_opener
from .test_conformance import LEASE, add_run, add_thread

TODAY = datetime.now(UTC).date()
# Priced by the operator's file: exact figures whatever the package's table says.
PRICES = {
    "openai:gpt-4o-mini": prices.Price(input=0.15, output=0.6, cached=0.075),
    "anthropic:claude-x": prices.Price(input=3.0, output=15.0, cached=0.3),
}


@pytest.fixture(autouse=True)
def known_prices() -> Iterator[None]:
    prices._current = prices.Prices(PRICES)
    yield
    prices._current = None


def ledger_of(run: Run, user: str | None, models: dict[str, Tokens] | None = None) -> Ledger:
    ledger = Ledger(run.run_id, run.thread_id, "bot", user_id=user)
    for model, tokens in (models or {}).items():
        ledger.count(model, tokens)
    with ledger.step("model", "openai:gpt-4o-mini") as step, ledger.step("tool", "search"):
        pass
    assert step is not None
    return ledger


def mini(input: int, output: int, cached: int = 0, calls: int = 1) -> dict[str, Tokens]:
    return {"openai:gpt-4o-mini": Tokens(input, output, cached, calls)}


async def ended_run(
    storage: Storage, user: str | None, models: dict[str, Tokens], *, thread: str | None = None
) -> Run:
    thread_id = thread or (await add_thread(storage)).thread_id
    run = await add_run(storage, thread_id, kwargs={"user_id": user})
    await storage.runs.finish(run.run_id, "success", usage=ledger_of(run, user, models))
    return run


async def test_a_run_end_stores_its_usage_and_trace(storage: Storage) -> None:
    thread = await add_thread(storage)
    run = await add_run(storage, thread.thread_id)
    ledger = ledger_of(
        run,
        "ann",
        {
            **mini(1000, 200, cached=400, calls=2),
            "anthropic:claude-x": Tokens(100, 10, 0, 1),
            "mystery:model": Tokens(5, 5, 0, 1),
        },
    )
    await storage.runs.finish(run.run_id, "success", usage=ledger)

    stored = await storage.runs.get(run.run_id)
    assert stored is not None
    assert stored.status == "success"
    usage = stored.usage
    assert usage is not None
    assert usage["input_tokens"] == 1105
    assert usage["output_tokens"] == 215
    assert usage["cached_tokens"] == 400
    assert usage["total_tokens"] == 1320
    assert usage["model_calls"] == 4
    mini_cost = (600 * 0.15 + 400 * 0.075 + 200 * 0.6) / 1e6
    claude_cost = (100 * 3.0 + 10 * 15.0) / 1e6
    assert usage["models"]["openai:gpt-4o-mini"]["cost_usd"] == pytest.approx(mini_cost)
    assert usage["models"]["mystery:model"]["cost_usd"] is None
    assert usage["cost_usd"] == pytest.approx(mini_cost + claude_cost)
    assert usage["unpriced_models"] == ["mystery:model"]

    trace = await storage.usage.trace(run.run_id)
    assert trace is not None
    assert trace == {**ledger.trace_json(), "duration_ms": trace["duration_ms"]}
    assert [step["kind"] for step in trace["steps"]] == ["model", "tool"]
    assert trace["steps"][1]["parent_id"] == trace["steps"][0]["id"]
    assert await storage.usage.trace(new_id()) is None

    # A run ended without a ledger (or one that called no model) has no usage.
    quiet = await add_run(storage, thread.thread_id)
    await storage.runs.finish(quiet.run_id, "success")
    assert (await storage.runs.get(quiet.run_id)).usage is None  # type: ignore[union-attr]
    idle = await add_run(storage, thread.thread_id)
    await storage.runs.finish(idle.run_id, "success", usage=ledger_of(idle, "ann"))
    assert (await storage.runs.get(idle.run_id)).usage is None  # type: ignore[union-attr]
    assert (await storage.usage.trace(idle.run_id))["steps"]  # type: ignore[index]


async def test_a_cancelled_run_keeps_what_it_spent(storage: Storage) -> None:
    run = await add_run(storage, (await add_thread(storage)).thread_id)
    ledger = ledger_of(run, None, mini(10, 5))
    await storage.runs.set_status(run.run_id, "interrupted", "cancelled", usage=ledger)
    stored = await storage.runs.get(run.run_id)
    assert stored is not None
    assert stored.cancel_reason == "cancelled"
    assert stored.usage is not None
    assert stored.usage["total_tokens"] == 15
    # Stored twice (set, then finished with the same ledger): counted once.
    await storage.runs.finish(run.run_id, "interrupted", usage=ledger)
    await storage.runs.set_status(run.run_id, "interrupted")  # keeps the usage
    assert (await storage.runs.get(run.run_id)).usage == stored.usage  # type: ignore[union-attr]
    (row,) = await storage.usage.summary(None, TODAY, TODAY)
    assert (row.tokens, row.runs) == (Tokens(10, 5, 0, 1), 1)


async def test_usage_outlives_its_run_and_thread_but_traces_do_not(storage: Storage) -> None:
    thread = await add_thread(storage)
    kept = await ended_run(storage, "ann", mini(10, 1), thread=thread.thread_id)
    deleted = await ended_run(storage, "ann", mini(20, 2), thread=thread.thread_id)
    other = await ended_run(storage, "ann", mini(40, 4))
    assert await storage.runs.delete(deleted.run_id)
    assert await storage.usage.trace(deleted.run_id) is None
    assert await storage.usage.trace(kept.run_id) is not None
    assert await storage.threads.delete(thread.thread_id)
    assert await storage.usage.trace(kept.run_id) is None
    assert await storage.usage.trace(other.run_id) is not None
    (row,) = await storage.usage.summary(None, TODAY, TODAY)
    assert (row.tokens.input, row.tokens.output, row.runs) == (70, 7, 3)


async def test_a_stale_attempt_stores_nothing(storage: Storage) -> None:
    """The ending writes of an attempt that no longer holds its run are refused whole."""
    thread = await add_thread(storage)
    await add_run(storage, thread.thread_id)
    run = await storage.runs.claim(now(), worker="a", lease=LEASE)
    assert run is not None
    fence = Fence(run.run_id, run.attempt, "a", extend=storage.runs.extend, stop=lambda: None)
    await storage.runs.release("a")
    with pytest.raises(StaleAttempt):
        await storage.runs.finish(
            run.run_id, "success", fence=fence, usage=ledger_of(run, "ann", mini(5, 5))
        )
    with pytest.raises(StaleAttempt):
        await storage.runs.set_status(
            run.run_id, "interrupted", fence=fence, usage=ledger_of(run, "ann", mini(5, 5))
        )
    assert (await storage.runs.get(run.run_id)).usage is None  # type: ignore[union-attr]
    assert await storage.usage.trace(run.run_id) is None
    assert await storage.usage.summary(None, TODAY, TODAY) == []

    second = await storage.runs.claim(now(), worker="b", lease=LEASE)
    assert second is not None
    fence = Fence(run.run_id, second.attempt, "b", extend=storage.runs.extend, stop=lambda: None)
    await storage.runs.finish(
        run.run_id, "success", fence=fence, usage=ledger_of(run, "ann", mini(7, 3))
    )
    (row,) = await storage.usage.summary(None, TODAY, TODAY)
    assert (row.tokens.total, row.runs) == (10, 1)


async def test_usage_summed_per_day_user_model_and_thread(storage: Storage) -> None:
    shared = await add_thread(storage)
    await ended_run(storage, "ann", mini(100, 10, cached=50), thread=shared.thread_id)
    await ended_run(
        storage,
        "ann",
        {**mini(200, 20), "anthropic:claude-x": Tokens(1, 1, 0, 1)},
        thread=shared.thread_id,
    )
    bob = await ended_run(storage, "bob", {**mini(1000, 100), "mystery:model": Tokens(3, 3, 0, 2)})
    await ended_run(storage, None, mini(7, 7))  # no user (the operator, no [auth])

    def keyed(rows: list[UsageRow]) -> dict[str | None, tuple[int, int, int]]:
        return {row.key: (row.tokens.total, row.tokens.calls, row.runs) for row in rows}

    by_user = await storage.usage.summary("user", TODAY, TODAY)
    assert keyed(by_user) == {None: (14, 1, 1), "ann": (332, 3, 2), "bob": (1106, 3, 1)}
    assert [row.unpriced_models for row in by_user] == [(), (), ("mystery:model",)]
    by_model = await storage.usage.summary("model", TODAY, TODAY)
    assert keyed(by_model) == {
        "anthropic:claude-x": (2, 1, 1),
        "mystery:model": (6, 2, 1),
        "openai:gpt-4o-mini": (1444, 4, 4),
    }
    unpriced = next(row for row in by_model if row.key == "mystery:model")
    assert unpriced.cost_usd is None
    assert unpriced.unpriced_models == ("mystery:model",)
    mini_cost = next(row for row in by_model if row.key == "openai:gpt-4o-mini").cost_usd
    expected = (50 * 0.15 + 50 * 0.075 + 200 * 0.15 + 1007 * 0.15 + 137 * 0.6) / 1e6
    assert mini_cost == pytest.approx(expected)
    assert keyed(await storage.usage.summary("day", TODAY, TODAY)) == {
        TODAY.isoformat(): (1452, 7, 4)
    }
    by_thread = await storage.usage.summary("thread", TODAY, TODAY, user_id="ann")
    assert keyed(by_thread) == {shared.thread_id: (332, 3, 2)}
    (everything,) = await storage.usage.summary(None, TODAY, TODAY)
    assert keyed([everything]) == {None: (1452, 7, 4)}
    assert everything.unpriced_models == ("mystery:model",)
    (bobs,) = await storage.usage.summary(None, TODAY, TODAY, thread_id=bob.thread_id)
    assert bobs.tokens == Tokens(1003, 103, 0, 3)
    assert bobs.as_json()["unpriced_models"] == ["mystery:model"]

    # Other days hold nothing.
    yesterday = TODAY - timedelta(days=1)
    assert await storage.usage.summary("user", yesterday, yesterday) == []
    assert await storage.usage.summary(None, TODAY + timedelta(days=1), date.max) == []

    # What budgets count since a moment: per user, or by every user.
    tokens, cost = await storage.usage.spent_on_budgets("ann", now() - timedelta(minutes=5))
    assert tokens == 332
    assert cost > 0
    everyone = await storage.usage.spent_on_budgets(None, now() - timedelta(minutes=5))
    assert everyone[0] == 1452
    later = await storage.usage.spent_on_budgets("ann", now() + timedelta(minutes=5))
    assert later == (0, 0.0)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_database_of_before_gets_the_usage_tables(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database at the schema version before usage is migrated when opened: its runs
    stay (with no usage), the new tables are there."""
    module = {"sqlite": sqlite_database, "postgres": postgres_database}[kind]
    monkeypatch.setattr(module, "MIGRATIONS", module.MIGRATIONS[:-1])
    async with contextlib.AsyncExitStack() as stack:
        if kind == "sqlite":
            older = SqliteStorage(tmp_path / "agentctl.db", tmp_path / "store.db")
            older_run = await _old_run(older)
            await older.close()
            monkeypatch.undo()
            storage: Storage = SqliteStorage(tmp_path / "agentctl.db", tmp_path / "store.db")
            stack.push_async_callback(storage.close)
        else:
            url = request.getfixturevalue("database_url")
            open_postgres = await stack.enter_async_context(postgres_opener(request))
            older_run = await _old_run(await open_postgres(url))
            monkeypatch.undo()
            storage = await open_postgres(url)
        run = await storage.runs.get(older_run)
        assert run is not None
        assert run.usage is None
        await ended_run(storage, "ann", mini(3, 4))
        (row,) = await storage.usage.summary("user", TODAY, TODAY)
        assert (row.key, row.tokens.total) == ("ann", 7)


async def _old_run(storage: Storage) -> str:
    """A run stored by a server of before usage (its columns, not the `usage` one)."""
    run_id, thread_id = new_id(), new_id()
    row = (run_id, thread_id, "agent", "success", "{}", "enqueue", "{}", 1, False, None)
    stamp = now()
    columns = (
        "run_id, thread_id, assistant_id, status, metadata, multitask_strategy, kwargs, "
        "attempt, temporary, not_before, created_at, updated_at, owner"
    )
    if isinstance(storage, SqliteStorage):
        storage.conn.execute(
            f"INSERT INTO runs ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*row, stamp.isoformat(), stamp.isoformat(), "x"),
        )
        storage.database.commit()
    else:
        async with storage.pool.connection() as conn:  # type: ignore[attr-defined]
            await conn.execute(
                f"INSERT INTO runs ({columns}) VALUES "
                "(%s, %s, %s, %s, %s::jsonb, %s, %s::jsonb, %s, %s, %s, %s, %s, %s)",
                (*row, stamp, stamp, "x"),
            )
    return run_id
