"""Fencing on every backend: only the attempt holding a run may write for it, and a claim
never waits for another replica's."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
import pytest
from langgraph.checkpoint.base import empty_checkpoint

from agentctl.storage import fence as fencing
from agentctl.storage.base import Run, Storage, ThreadUpdate, new_id, now
from agentctl.storage.fence import Fence, StaleAttempt
from agentctl.storage.postgres import PostgresStorage

from .test_conformance import LEASE, add_run, add_thread


class Attempt:
    """A claimed attempt of a run and its fence, counting how often it was stopped."""

    def __init__(self, storage: Storage, run: Run, worker: str) -> None:
        self.storage, self.run, self.stops = storage, run, 0
        self.fence = Fence(
            run.run_id, run.attempt, worker, extend=storage.runs.extend, stop=self._stop
        )

    def _stop(self) -> None:
        self.stops += 1

    async def put_checkpoint(self) -> Any:
        token = fencing.current.set(self.fence)
        try:
            config = {"configurable": {"thread_id": self.run.thread_id, "checkpoint_ns": ""}}
            metadata = {"run_id": self.run.run_id, "step": self.run.attempt}
            return await self.storage.checkpointer.aput(config, empty_checkpoint(), metadata, {})
        finally:
            fencing.current.reset(token)

    async def writes(self) -> list[str]:
        """Make every kind of write a run makes; the names of those refused."""
        refused = []
        storage, run, fence = self.storage, self.run, self.fence
        change = ThreadUpdate(metadata={"by": run.attempt}, status="busy")
        writes: dict[str, Callable[[], Awaitable[Any]]] = {
            "thread": lambda: storage.threads.update(run.thread_id, change, fence=fence),
            "event": lambda: storage.events.append(
                run.thread_id, run.run_id, "values", b"{}", fence=fence
            ),
            "checkpoint": self.put_checkpoint,
            "status": lambda: storage.runs.set_status(run.run_id, "running", fence=fence),
        }
        for name, write in writes.items():
            try:
                await write()
            except StaleAttempt:
                refused.append(name)
        return refused


async def claim(storage: Storage, worker: str) -> Run:
    run = await storage.runs.claim(now(), worker=worker, lease=LEASE)
    assert run is not None
    return run


async def test_only_the_attempt_holding_a_run_writes(storage: Storage) -> None:
    thread = await add_thread(storage)
    await add_run(storage, thread.thread_id)
    first = Attempt(storage, await claim(storage, "a"), "a")
    assert await first.writes() == []
    assert await storage.runs.extend(first.fence)
    events = await storage.events.read(thread.thread_id, after=None)

    # Its lease ran out while its replica stalled: another replica requeued the run (and,
    # as the engine does, told the event log).
    await storage.runs.release("a")
    await storage.events.supersede(first.run.run_id, first.run.attempt)
    every = ["thread", "event", "checkpoint", "status"]
    assert await first.writes() == every
    assert first.stops == 1
    assert first.fence.stale
    assert not await storage.runs.extend(first.fence)
    with pytest.raises(StaleAttempt):
        await first.fence.check()
    assert await storage.events.read(thread.thread_id, after=None) == events
    assert (await storage.runs.get(first.run.run_id)).status == "pending"  # type: ignore[union-attr]

    second = Attempt(storage, await claim(storage, "b"), "b")
    assert second.run.attempt == 2
    assert await second.writes() == []
    # The first attempt stays refused, also once the second has written.
    first.fence.stale = False
    assert await first.writes() == every
    thread_after = await storage.threads.get(thread.thread_id)
    assert thread_after is not None
    assert thread_after.metadata["by"] == 2
    latest = await storage.checkpointer.aget_tuple(
        {"configurable": {"thread_id": thread.thread_id}}
    )
    assert latest.metadata["step"] == 2

    # Ended by its attempt, a run takes the ending writes of that attempt only.
    await storage.runs.finish(second.run.run_id, "success", fence=second.fence)
    end = b"{}"
    await storage.events.append(thread.thread_id, second.run.run_id, "end", end, fence=second.fence)
    with pytest.raises(StaleAttempt):
        await storage.runs.finish(first.run.run_id, "error", fence=first.fence)
    assert (await storage.runs.get(first.run.run_id)).status == "success"  # type: ignore[union-attr]


async def test_a_write_right_after_the_run_changed_hands_is_refused(storage: Storage) -> None:
    """However recently the attempt wrote: the embedded store reads a run's row again once
    that row changed, not at every write of an attempt it saw holding its run."""
    thread = await add_thread(storage)
    await add_run(storage, thread.thread_id)
    first = Attempt(storage, await claim(storage, "a"), "a")

    async def append(fence: Fence) -> None:
        await storage.events.append(thread.thread_id, fence.run_id, "values", b"{}", fence=fence)

    for _ in range(3):
        await append(first.fence)
    await storage.runs.release("a")
    await storage.events.supersede(first.run.run_id, first.run.attempt)
    with pytest.raises(StaleAttempt):
        await append(first.fence)

    second = Attempt(storage, await claim(storage, "b"), "b")
    for _ in range(3):
        await append(second.fence)
    first.fence.stale = False
    with pytest.raises(StaleAttempt):
        await append(first.fence)
    assert first.stops == 2
    assert second.stops == 0


async def test_a_run_changing_hands_leaves_the_other_runs_writing(storage: Storage) -> None:
    """Two runs in flight on two replicas: one is taken over; its stale attempt's writes are
    refused, and the other run's go on."""
    threads = [await add_thread(storage) for _ in range(2)]
    for thread in threads:
        await add_run(storage, thread.thread_id)
    taken = Attempt(storage, await claim(storage, "a"), "a")
    kept = Attempt(storage, await claim(storage, "b"), "b")
    assert await taken.writes() == []
    assert await kept.writes() == []

    await storage.runs.release("a")
    await storage.events.supersede(taken.run.run_id, taken.run.attempt)
    again = Attempt(storage, await claim(storage, "c"), "c")
    assert again.run.run_id == taken.run.run_id
    assert await taken.writes() == ["thread", "event", "checkpoint", "status"]
    assert await kept.writes() == []
    assert await again.writes() == []
    assert taken.stops == 1
    assert kept.stops == again.stops == 0


async def test_the_same_worker_claiming_again_is_another_attempt(storage: Storage) -> None:
    await add_run(storage, (await add_thread(storage)).thread_id)
    first = Attempt(storage, await claim(storage, "a"), "a")
    await storage.runs.release("a")
    second = Attempt(storage, await claim(storage, "a"), "a")
    assert await second.writes() == []
    assert "status" in await first.writes()


@pytest.mark.postgres
async def test_a_stalled_replica_holds_up_no_claim(storage: Storage, database_url: str) -> None:
    if not isinstance(storage, PostgresStorage):
        pytest.skip("one process uses the embedded database")
    await add_run(storage, (await add_thread(storage)).thread_id)
    free = await add_run(storage, (await add_thread(storage)).thread_id)
    stalled_run = await storage.runs.claim(now(), worker="stalled", lease=0.05)
    assert stalled_run is not None
    await asyncio.sleep(0.1)  # its lease ran out
    # The stalled replica froze inside a fenced write: its run's row stays locked, its
    # transaction open (until PostgreSQL's idle-in-transaction timeout ends it).
    async with await psycopg.AsyncConnection.connect(
        database_url, options=f"-c search_path={storage.schema or 'public'}"
    ) as stalled:
        await stalled.execute("BEGIN")
        await stalled.execute(
            "SELECT 1 FROM runs WHERE run_id = %s FOR SHARE", (stalled_run.run_id,)
        )
        claimed = await asyncio.wait_for(claim(storage, "other"), 10)
        assert claimed.run_id == free.run_id
        # Its run is requeued at the next look, once the row is free.
        assert await asyncio.wait_for(storage.runs.requeue_orphans("other", now()), 10) == []
        await stalled.execute("ROLLBACK")
    requeued = await storage.runs.requeue_orphans("other", now())
    assert [run.run_id for run in requeued] == [stalled_run.run_id]


@pytest.mark.postgres
async def test_a_lease_renewal_beside_a_batch_of_saves_does_not_deadlock(
    storage: Storage, database_url: str
) -> None:
    """A batch of checkpoint saves share-locks its runs' rows, one save after another, while
    the replica renews its leases: both lock the rows in one order, so one waits for the
    other and both go through (they deadlocked when a renewal took the table's order)."""
    if not isinstance(storage, PostgresStorage):
        pytest.skip("one process uses the embedded database")
    for _ in range(2):
        await add_run(storage, (await add_thread(storage)).thread_id)
    first, second = sorted([await claim(storage, "a"), await claim(storage, "a")],
                           key=lambda run: run.run_id)  # fmt: skip
    # The first run released and claimed again: in the table and its index of workers, its
    # row now comes after the second's.
    await storage.runs.release("a", run_id=first.run_id)
    first = await claim(storage, "a")
    async with await psycopg.AsyncConnection.connect(
        database_url, options=f"-c search_path={storage.schema or 'public'}"
    ) as saves:
        await saves.execute("BEGIN")
        await saves.execute("SET LOCAL lock_timeout = '5s'")
        await saves.execute("SELECT 1 FROM runs WHERE run_id = %s FOR SHARE", (first.run_id,))
        renewal = asyncio.ensure_future(storage.runs.renew("a", LEASE))
        await asyncio.sleep(0.5)  # it waits for the first run's row
        assert not renewal.done()
        await saves.execute("SELECT 1 FROM runs WHERE run_id = %s FOR SHARE", (second.run_id,))
        await saves.execute("COMMIT")
    held = await asyncio.wait_for(renewal, 10)
    assert held == {first.run_id: first.attempt, second.run_id: second.attempt}


async def test_an_unfenced_append_is_not_refused(storage: Storage) -> None:
    """Appends of no attempt (a cancelled pending run's end, a state update) are not fenced."""
    thread = await add_thread(storage)
    event = await storage.events.append(thread.thread_id, new_id(), "end", b"{}")
    assert [e.id for e in await storage.events.read(thread.thread_id, after=None)] == [event.id]


async def test_saves_sent_together_refuse_only_the_stale_attempts(storage: Storage) -> None:
    """Checkpoints of a stale attempt and of the attempt holding the run, saved at once (on
    PostgreSQL, in one batch): the stale one is refused, the other stored."""
    thread = await add_thread(storage)
    await add_run(storage, thread.thread_id)
    first = Attempt(storage, await claim(storage, "a"), "a")
    await storage.runs.release("a")
    await storage.events.supersede(first.run.run_id, first.run.attempt)
    second = Attempt(storage, await claim(storage, "b"), "b")
    outcomes: tuple[Any, ...] = await asyncio.gather(
        first.put_checkpoint(), second.put_checkpoint(), return_exceptions=True
    )
    assert isinstance(outcomes[0], StaleAttempt)
    assert not isinstance(outcomes[1], BaseException)
    latest = await storage.checkpointer.aget_tuple(
        {"configurable": {"thread_id": thread.thread_id}}
    )
    assert latest.metadata["step"] == 2
