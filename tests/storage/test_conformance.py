"""One conformance suite for every storage backend: what the server relies on, asserted the
same way on the embedded SQLite storage and on PostgreSQL (+ the injected event log and bus).

Where the backends differ on purpose (SQLite is used by one process, PostgreSQL by many),
the test says so with `storage.kind`.
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypedDict, cast

import psycopg
import pytest
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.graph import END, START, StateGraph

from agentctl.errors import RuntimeFailure
from agentctl.storage.base import (
    A2ATask,
    A2ATaskFilter,
    AgentRecord,
    Assistant,
    AssistantFilter,
    ConsentFlow,
    Cron,
    CronFilter,
    EventLog,
    NewRevision,
    Page,
    Run,
    SandboxCleanup,
    Storage,
    Thread,
    ThreadFilter,
    ThreadUpdate,
    UserConnection,
    new_id,
    now,
)
from agentctl.storage.bus import LocalBus
from agentctl.storage.postgres import PostgresStorage
from agentctl.storage.postgres import database as postgres_database
from agentctl.storage.sqlite import SqliteStorage
from agentctl.storage.sqlite import database as sqlite_database
from tests.conftest import eventually

from .conftest import OpenPostgres, postgres_opener

LEASE = 60.0
LATER = timedelta(hours=1)


def is_utc(value: datetime | None) -> bool:
    return value is not None and value.utcoffset() == timedelta(0)


async def add_thread(storage: Storage, **metadata: Any) -> Thread:
    thread = Thread(new_id(), metadata=metadata)
    assert await storage.threads.create(thread)
    return thread


async def add_run(storage: Storage, thread_id: str, **fields: Any) -> Run:
    run = Run(new_id(), thread_id, "agent", **fields)
    await storage.runs.create(run)
    return run


async def claim_id(storage: Storage, worker: str = "w") -> str | None:
    run = await storage.runs.claim(now(), worker=worker, lease=LEASE)
    return None if run is None else run.run_id


async def status_of(storage: Storage, run_id: str) -> str | None:
    run = await storage.runs.get(run_id)
    return None if run is None else run.status


def ids(items: list[Run] | list[Thread]) -> list[str]:
    return [item.run_id if isinstance(item, Run) else item.thread_id for item in items]


# -- assistants --------------------------------------------------------------------------


async def test_assistant_versions(storage: Storage) -> None:
    aid = new_id()
    await storage.assistants.put(Assistant(aid, "agent", "first", metadata={"tag": "a"}))
    await storage.assistants.put(
        Assistant(aid, "agent", "second", config={"k": 1}, metadata={"tag": "b"}, version=2)
    )
    latest = await storage.assistants.get(aid)
    assert latest is not None
    assert (latest.name, latest.version, latest.config) == ("second", 2, {"k": 1})
    assert is_utc(latest.created_at)
    assert is_utc(latest.updated_at)
    assert await storage.assistants.latest_version(aid) == 2
    assert await storage.assistants.latest_version(new_id()) == 0

    versions = await storage.assistants.versions(aid, metadata={}, limit=10, offset=0)
    assert [v.version for v in versions] == [2, 1]
    tagged = await storage.assistants.versions(aid, metadata={"tag": "a"}, limit=10, offset=0)
    assert [v.name for v in tagged] == ["first"]
    assert [v.version for v in await storage.assistants.versions(
        aid, metadata={}, limit=1, offset=1)] == [1]  # fmt: skip

    restored = await storage.assistants.set_latest(aid, 1)
    assert restored is not None
    assert (restored.name, restored.version) == ("first", 1)
    assert getattr(await storage.assistants.get(aid), "version", None) == 1
    assert await storage.assistants.set_latest(aid, 7) is None
    assert await storage.assistants.set_latest(new_id(), 1) is None

    assert await storage.assistants.delete(aid)
    assert await storage.assistants.get(aid) is None
    assert await storage.assistants.versions(aid, metadata={}, limit=10, offset=0) == []
    assert not await storage.assistants.delete(aid)


async def test_assistant_search(storage: Storage) -> None:
    specs: list[tuple[str, str, dict[str, Any]]] = [
        ("alpha", "g1", {"team": "x"}), ("Beta_1", "g1", {"team": "y"}),
        ("gamma", "g2", {"team": "x", "n": 1}), ("beta 100%", "g2", {}),
    ]  # fmt: skip
    for name, graph, metadata in specs:
        await storage.assistants.put(Assistant(new_id(), graph, name, metadata=metadata))

    async def names(page: Page | None = None, **kw: Any) -> tuple[list[str], int]:
        found, total = await storage.assistants.search(AssistantFilter(**kw), page or Page())
        return [a.name for a in found], total

    assert await names(page=Page(sort_by="name", sort_order="asc")) == (
        ["Beta_1", "alpha", "beta 100%", "gamma"], 4)  # fmt: skip
    assert await names(graph_id="g1", page=Page(sort_order="asc")) == (["alpha", "Beta_1"], 2)
    assert (await names(name="BETA"))[1] == 2  # case-insensitive substring
    assert await names(name="100%") == (["beta 100%"], 1)  # % is literal
    assert await names(name="a_1") == (["Beta_1"], 1)  # _ is literal
    assert await names(metadata={"team": "x"}, page=Page(sort_order="asc")) == (
        ["alpha", "gamma"], 2)  # fmt: skip
    assert await names(metadata={"team": "x", "n": 1}) == (["gamma"], 1)
    assert await names(metadata={"team": None}) == (["beta 100%"], 1)
    page = Page(limit=2, offset=1, sort_by="created_at", sort_order="asc")
    assert await names(page=page) == (["Beta_1", "gamma"], 4)


# -- threads -----------------------------------------------------------------------------


async def test_thread_crud(storage: Storage) -> None:
    thread = Thread(new_id(), metadata={"owner": "ann", "a": {"b": 1}})
    assert await storage.threads.create(thread)
    assert not await storage.threads.create(Thread(thread.thread_id, metadata={"x": 1}))
    stored = await storage.threads.get(thread.thread_id)
    assert stored == thread
    assert is_utc(stored.created_at)

    change = ThreadUpdate(
        metadata={"a": 2, "c": None},
        status="interrupted",
        interrupts={"task": [{"value": "ok?", "id": "i1"}]},
    )
    updated = await storage.threads.update(thread.thread_id, change)
    assert updated is not None
    assert updated.metadata == {"owner": "ann", "a": 2, "c": None}
    assert updated.status == "interrupted"
    assert updated.interrupts == {"task": [{"value": "ok?", "id": "i1"}]}
    assert updated.updated_at > thread.updated_at
    assert await storage.threads.get(thread.thread_id) == updated
    # Only the fields given change.
    again = await storage.threads.update(thread.thread_id, ThreadUpdate(status="idle"))
    assert again is not None
    assert (again.metadata, again.interrupts) == (updated.metadata, updated.interrupts)
    assert await storage.threads.update(new_id(), ThreadUpdate(status="busy")) is None


async def test_thread_search(storage: Storage) -> None:
    a = await add_thread(storage, owner="ann", kind="chat", tags=["x"])
    b = await add_thread(storage, owner="bob", kind="chat", flag=None)
    c = await add_thread(storage, owner="ann")
    await storage.threads.update(c.thread_id, ThreadUpdate(status="busy"))

    async def found(page: Page | None = None, **kw: Any) -> tuple[list[str], int]:
        threads, total = await storage.threads.search(ThreadFilter(**kw), page or Page())
        return ids(threads), total

    assert await found() == ([c.thread_id, b.thread_id, a.thread_id], 3)  # newest first
    assert await found(metadata={"owner": "ann"}, page=Page(sort_order="asc")) == (
        [a.thread_id, c.thread_id], 2)  # fmt: skip
    assert await found(metadata={"owner": "ann", "kind": "chat"}) == ([a.thread_id], 1)
    assert await found(metadata={"tags": ["x"]}) == ([a.thread_id], 1)
    assert await found(metadata={"tags": "x"}) == ([], 0)
    # None: the key is missing or null.
    assert await found(metadata={"flag": None}, page=Page(sort_order="asc")) == (
        [a.thread_id, b.thread_id, c.thread_id], 3)  # fmt: skip
    assert await found(metadata={"kind": None}) == ([c.thread_id], 1)
    assert await found(status="busy") == ([c.thread_id], 1)
    assert await found(ids=[a.thread_id, c.thread_id, new_id()]) == (
        [c.thread_id, a.thread_id], 2)  # fmt: skip
    assert await found(ids=[]) == ([], 0)
    assert await found(page=Page(limit=1, offset=1)) == ([b.thread_id], 3)
    by_update = await found(page=Page(sort_by="updated_at", sort_order="desc", limit=1))
    assert by_update == ([c.thread_id], 3)


async def test_thread_delete_cascades(storage: Storage) -> None:
    doomed, kept = await add_thread(storage), await add_thread(storage)
    graph = counter_graph(storage.checkpointer)
    for thread in (doomed, kept):
        await add_run(storage, thread.thread_id)
        await storage.events.append(thread.thread_id, "r", "values", b"{}")
        await graph.ainvoke({"log": ["x"]}, config(thread.thread_id))
    run = await add_run(storage, doomed.thread_id)

    assert await storage.threads.delete(doomed.thread_id)
    assert await storage.threads.get(doomed.thread_id) is None
    assert await storage.runs.get(run.run_id) is None
    assert await storage.runs.list(doomed.thread_id, status=None, limit=10, offset=0) == []
    assert await storage.events.read(doomed.thread_id, after=None) == []
    assert await storage.checkpointer.aget_tuple(config(doomed.thread_id)) is None
    assert not await storage.threads.delete(doomed.thread_id)

    assert await storage.threads.get(kept.thread_id) is not None
    assert len(await storage.runs.list(kept.thread_id, status=None, limit=10, offset=0)) == 1
    assert len(await storage.events.read(kept.thread_id, after=None)) == 1
    assert (await graph.aget_state(config(kept.thread_id))).values["log"] == ["x", "n=1"]


async def test_a2a_tasks(storage: Storage) -> None:
    """Stored whole (JSON as the protocol writes it), listed newest first a page at a time
    (a cursor: position, then id), filtered by owner, context, state and time, deleted
    with their context's thread."""
    tasks = storage.a2a_tasks
    thread, other = await add_thread(storage), await add_thread(storage)

    def task(n: int, context: Thread, owner: str | None, state: str, position: int) -> A2ATask:
        body = {"id": f"t{n}", "artifacts": [{"parts": [{"text": f"answer {n} é"}]}]}
        return A2ATask(f"t{n}", context.thread_id, owner, state, position, body)

    made = [
        task(1, thread, "alice", "TASK_STATE_COMPLETED", 100),
        task(2, thread, None, "TASK_STATE_WORKING", 300),
        task(3, other, "alice", "TASK_STATE_COMPLETED", 300),
        task(4, other, "bob", "TASK_STATE_FAILED", -1),  # no timestamp: listed last
        task(5, thread, "alice", "TASK_STATE_SUBMITTED", 200),
    ]
    for record in made:
        await tasks.put(record)
    stored = await tasks.get("t1")
    assert stored is not None
    assert stored.task == made[0].task
    assert is_utc(stored.updated_at)
    assert await tasks.get("nope") is None

    async def ids(limit: int = 10, **where: Any) -> tuple[list[str], int]:
        found, total = await tasks.list(A2ATaskFilter(**where), limit)
        return [t.task_id for t in found], total

    assert await ids() == (["t3", "t2", "t5", "t1", "t4"], 5)
    assert await ids(2) == (["t3", "t2"], 5)
    assert await ids(2, after=(300, "t2")) == (["t5", "t1"], 5)
    assert await ids(after=(100, "t1")) == (["t4"], 5)
    assert await ids(owner="alice") == (["t3", "t5", "t1"], 3)
    assert await ids(context_id=thread.thread_id) == (["t2", "t5", "t1"], 3)
    assert await ids(state="TASK_STATE_COMPLETED") == (["t3", "t1"], 2)
    assert await ids(since=200) == (["t3", "t2", "t5"], 3)

    await tasks.put(replace(made[1], state="TASK_STATE_COMPLETED", position=400))
    assert await ids(1) == (["t2"], 5)
    assert await tasks.delete("t4")
    assert not await tasks.delete("t4")
    assert await storage.threads.delete(thread.thread_id)
    assert await ids() == (["t3"], 1)


# -- runs --------------------------------------------------------------------------------


async def test_run_records(storage: Storage) -> None:
    thread = await add_thread(storage)
    first = await add_run(
        storage, thread.thread_id, kwargs={"input": {"q": "é"}}, metadata={"m": 1}, temporary=True
    )
    second = await add_run(storage, thread.thread_id, multitask_strategy="reject")
    third = await add_run(storage, thread.thread_id)
    assert await storage.runs.get(first.run_id) == first
    assert await storage.runs.get(new_id()) is None

    await storage.runs.finish(first.run_id, "error", error={"error": "Boom", "message": "x"})
    await storage.runs.set_status(second.run_id, "interrupted", "cancelled")
    await storage.runs.set_status(second.run_id, "interrupted")  # keeps the reason
    done = await storage.runs.get(first.run_id)
    assert done is not None
    assert done.status == "error"
    assert done.error == {"error": "Boom", "message": "x"}
    assert done.updated_at >= first.updated_at
    assert is_utc(done.updated_at)
    stopped = await storage.runs.get(second.run_id)
    assert stopped is not None
    assert stopped.cancel_reason == "cancelled"

    listed = await storage.runs.list(thread.thread_id, status=None, limit=10, offset=0)
    assert ids(listed) == [third.run_id, second.run_id, first.run_id]
    assert ids(await storage.runs.list(thread.thread_id, status="error", limit=10, offset=0)) == [
        first.run_id
    ]
    assert ids(await storage.runs.list(thread.thread_id, status=None, limit=1, offset=1)) == [
        second.run_id
    ]
    assert ids(await storage.runs.active(thread.thread_id)) == [third.run_id]
    other = await add_run(storage, (await add_thread(storage)).thread_id)
    assert ids(await storage.runs.all_active()) == [third.run_id, other.run_id]
    assert await storage.runs.count_by_status() == {"error": 1, "interrupted": 1, "pending": 2}

    assert await storage.runs.delete(third.run_id)
    assert not await storage.runs.delete(third.run_id)
    assert await storage.runs.active(thread.thread_id) == []


async def test_claim_order_delay_and_one_run_per_thread(storage: Storage) -> None:
    t1, t2, t3 = [await add_thread(storage) for _ in range(3)]
    r1 = await add_run(storage, t1.thread_id)
    r2 = await add_run(storage, t1.thread_id)
    later = now() + timedelta(hours=1)
    r3 = await add_run(storage, t2.thread_id, not_before=later)
    r4 = await add_run(storage, t3.thread_id)
    assert await storage.runs.next_wakeup() == later

    claimed = await storage.runs.claim(now(), worker="w", lease=LEASE)
    assert claimed is not None
    assert claimed.run_id == r1.run_id
    assert (claimed.status, claimed.attempt) == ("running", 1)
    assert await storage.runs.get(r1.run_id) == claimed
    # r2 waits for r1 (same thread), r3 for its time: r4 is next.
    assert await claim_id(storage) == r4.run_id
    assert await claim_id(storage) is None
    delayed = await storage.runs.claim(later, worker="w", lease=LEASE)
    assert delayed is not None
    assert delayed.run_id == r3.run_id
    assert await storage.runs.next_wakeup() is None

    await storage.runs.finish(r1.run_id, "success")
    assert await claim_id(storage) == r2.run_id


async def test_claims_are_fair_between_owners(storage: Storage) -> None:
    """One user's backlog does not hold back another's: the next claim takes the oldest
    runnable run of the owner with the fewest runs running, the oldest owner among equals."""

    async def add(user: str | None, thread: Thread | None = None, **fields: Any) -> Run:
        thread = thread or await add_thread(storage)
        kwargs = {"user_id": user} if user else {}
        return await add_run(storage, thread.thread_id, kwargs=kwargs, **fields)

    a = [await add("a") for _ in range(10)]
    b = await add("b")
    # A replica with two slots: A's first run, then B's before A's second.
    assert await claim_id(storage) == a[0].run_id
    assert await claim_id(storage) == b.run_id
    await storage.runs.finish(a[0].run_id, "success")
    assert await claim_id(storage) == a[1].run_id  # A: 0 running, B: 1
    c = await add("c")
    assert await claim_id(storage) == c.run_id  # C: 0 running
    assert await claim_id(storage) == a[2].run_id  # all at 1: A's is the oldest
    assert await claim_id(storage) == a[3].run_id  # B and C have none pending
    for run in (b, c):
        await storage.runs.finish(run.run_id, "success")

    # A thread's runs start in order, whoever owns them: here the newer run's owner (without
    # a user, its assistant) has none running, the older one's has one.
    e = await add("e")
    assert await claim_id(storage) == e.run_id
    thread = await add_thread(storage)
    first = await add("e", thread)
    second = await add(None, thread)
    assert await claim_id(storage) == first.run_id
    assert await claim_id(storage) == a[4].run_id  # `second` waits for `first`
    await storage.runs.finish(first.run_id, "success")
    assert await claim_id(storage) == second.run_id
    # A delayed run holds back no later run of its thread.
    delayed = await add("d", later := await add_thread(storage), not_before=now() + LATER)
    after = await add("d", later)
    assert await claim_id(storage) == after.run_id
    assert await status_of(storage, delayed.run_id) == "pending"


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_runs_waiting_across_an_upgrade_are_claimed_fairly(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs pending in a database made before runs had owners get theirs when it is
    migrated: none is left unclaimable, and the fair order applies to them."""
    old = {"sqlite": (sqlite_database, 2), "postgres": (postgres_database, 1)}[kind]
    monkeypatch.setattr(old[0], "MIGRATIONS", old[0].MIGRATIONS[: old[1]])
    columns = "run_id, thread_id, assistant_id, status, metadata, multitask_strategy, kwargs, "
    columns += "attempt, temporary, created_at, updated_at"
    users = ["a", "a", "b"]
    run_ids = [new_id() for _ in users]
    rows = [
        (run_id, new_id(), "agent", "pending", "{}", "enqueue", f'{{"user_id": "{user}"}}', 0,
         False, (at := now() + timedelta(seconds=i)).isoformat(), at.isoformat())
        for i, (run_id, user) in enumerate(zip(run_ids, users, strict=True))
    ]  # fmt: skip
    async with contextlib.AsyncExitStack() as stack:
        if kind == "sqlite":
            older = SqliteStorage(tmp_path / "agentctl.db", tmp_path / "store.db")
            placeholders = ", ".join("?" * 11)
            older.conn.executemany(f"INSERT INTO runs ({columns}) VALUES ({placeholders})", rows)
            await older.close()
            monkeypatch.undo()
            storage: Storage = SqliteStorage(tmp_path / "agentctl.db", tmp_path / "store.db")
            stack.push_async_callback(storage.close)
        else:
            url = request.getfixturevalue("database_url")
            open_postgres = await stack.enter_async_context(postgres_opener(request))
            async with (await open_postgres(url)).pool.connection() as conn:
                await conn.cursor().executemany(
                    f"INSERT INTO runs ({columns}) VALUES ({', '.join(['%s'] * 11)})", rows
                )
            monkeypatch.undo()
            storage = await open_postgres(url)
        claimed = [await claim_id(storage) for _ in range(4)]
        assert claimed == [run_ids[0], run_ids[2], run_ids[1], None]


async def test_leases(storage: Storage) -> None:
    thread = await add_thread(storage)
    run = await add_run(storage, thread.thread_id)
    await storage.runs.claim(now(), worker="old", lease=LEASE)
    assert await storage.runs.renew("old", LEASE) == {run.run_id: 1}
    assert await storage.runs.renew("new", LEASE) == {}
    assert await storage.runs.requeue_orphans("old", now()) == []  # its own live run

    requeued = await storage.runs.requeue_orphans("new", now())
    if storage.kind == "postgres":
        # Another replica's live lease is respected; once expired (by the database's
        # clock), the run is requeued.
        assert requeued == []
        assert await storage.runs.renew("old", 0.05) == {run.run_id: 1}
        await asyncio.sleep(0.1)
        requeued = await storage.runs.requeue_orphans("new", now())
    # On SQLite one process serves the file: another worker's run was left by a dead one.
    assert ids(requeued) == [run.run_id]
    assert (requeued[0].status, requeued[0].attempt) == ("pending", 1)
    assert await status_of(storage, run.run_id) == "pending"
    assert await storage.runs.renew("old", LEASE) == {}  # the old worker must stop

    again = await storage.runs.claim(now(), worker="new", lease=LEASE)
    assert again is not None
    assert (again.run_id, again.attempt) == (run.run_id, 2)
    assert await storage.runs.renew("new", LEASE) == {run.run_id: 2}


async def test_expired_lease_is_requeued(storage: Storage) -> None:
    run = await add_run(storage, (await add_thread(storage)).thread_id)
    await storage.runs.claim(now(), worker="w", lease=0.05)
    await asyncio.sleep(0.1)
    assert ids(await storage.runs.requeue_orphans("w", now())) == [run.run_id]


async def test_release(storage: Storage) -> None:
    runs = [await add_run(storage, (await add_thread(storage)).thread_id) for _ in range(3)]
    for worker in ("a", "a", "b"):
        await storage.runs.claim(now(), worker=worker, lease=LEASE)
    released = await storage.runs.release("a")
    assert ids(released) == ids(runs[:2])
    assert all(run.status == "pending" and run.attempt == 1 for run in released)
    assert await storage.runs.renew("a", LEASE) == {}
    assert await storage.runs.renew("b", LEASE) == {runs[2].run_id: 1}
    assert await storage.runs.release("a") == []
    claimed = await storage.runs.claim(now(), worker="c", lease=LEASE)
    assert claimed is not None
    assert (claimed.run_id, claimed.attempt) == (runs[0].run_id, 2)


async def test_run_starts(storage: Storage) -> None:
    """Run starts (for runs-per-minute budgets): per user or all, newest first, at most
    `limit`; forgotten before a moment."""
    base = now() - timedelta(minutes=10)
    for seconds, user in [(0, "a"), (30, "a"), (40, None), (50, "b"), (55, "a")]:
        await storage.runs.note_start(user, base + timedelta(seconds=seconds))
    since = base + timedelta(seconds=20)
    assert await storage.runs.starts(since, limit=10) == [
        base + timedelta(seconds=s) for s in (55, 50, 40, 30)
    ]
    assert await storage.runs.starts(since, user_id="a", limit=10) == [
        base + timedelta(seconds=s) for s in (55, 30)
    ]
    assert await storage.runs.starts(base, user_id="a", limit=2) == [
        base + timedelta(seconds=s) for s in (55, 30)
    ]
    assert await storage.runs.starts(base, user_id="c", limit=5) == []
    assert await storage.runs.forget_starts(since) == 1
    assert len(await storage.runs.starts(base, limit=10)) == 4


async def test_cancel_pending(storage: Storage) -> None:
    thread = await add_thread(storage)
    kept, dropped, running = [await add_run(storage, thread.thread_id) for _ in range(3)]
    assert await storage.runs.cancel_pending(kept.run_id, delete=False)
    cancelled = await storage.runs.get(kept.run_id)
    assert cancelled is not None
    assert (cancelled.status, cancelled.cancel_reason) == ("interrupted", "cancelled")
    assert not await storage.runs.cancel_pending(kept.run_id, delete=False)

    assert await storage.runs.cancel_pending(dropped.run_id, delete=True)
    assert await storage.runs.get(dropped.run_id) is None
    assert not await storage.runs.cancel_pending(dropped.run_id, delete=True)

    assert await claim_id(storage) == running.run_id
    assert not await storage.runs.cancel_pending(running.run_id, delete=True)
    assert not await storage.runs.cancel_pending(running.run_id, delete=False)
    assert await status_of(storage, running.run_id) == "running"


async def test_cancel_pending_races_claim(storage: Storage) -> None:
    for i in range(12):
        run = await add_run(storage, (await add_thread(storage)).thread_id)
        claimed, cancelled = await asyncio.gather(
            storage.runs.claim(now(), worker="w", lease=LEASE),
            storage.runs.cancel_pending(run.run_id, delete=i % 2 == 0),
        )
        assert (claimed is not None) != cancelled, "exactly one of claim and cancel wins"
        stored = await storage.runs.get(run.run_id)
        if claimed is not None:
            assert stored is not None
            assert stored.status == "running"
        else:
            assert stored is None or stored.status == "interrupted"
        await storage.runs.finish(run.run_id, "success")


async def test_concurrent_claims_across_replicas(
    database_url: str, open_postgres: OpenPostgres
) -> None:
    """Three replicas starting together on a fresh database (migrations race too), then
    claiming 30 runs of 10 threads at once: each run is taken once, and a thread never has
    two runs executing."""
    replicas = await asyncio.gather(*(open_postgres(database_url) for _ in range(3)))
    threads = [await add_thread(replicas[0]) for _ in range(10)]
    # Thread by thread: the oldest runs all belong to one thread, the hardest case.
    runs = [await add_run(replicas[0], t.thread_id) for t in threads for _ in range(3)]
    executing: set[str] = set()
    taken: list[tuple[str, str, int]] = []

    async def worker(storage: Storage, name: str) -> None:
        idle = 0
        while idle < 5:
            run = await storage.runs.claim(now(), worker=name, lease=LEASE)
            if run is None:
                idle += 1
                await asyncio.sleep(0.01)
                continue
            idle = 0
            assert run.thread_id not in executing, "two runs of one thread executing"
            executing.add(run.thread_id)
            taken.append((run.run_id, name, run.attempt))
            await asyncio.sleep(0.005)
            executing.discard(run.thread_id)  # before the run is finished
            await storage.runs.finish(run.run_id, "success")

    await asyncio.gather(
        *(worker(r, f"r{i}w{j}") for i, r in enumerate(replicas) for j in range(3))
    )
    assert sorted(run_id for run_id, _, _ in taken) == sorted(r.run_id for r in runs)
    assert {attempt for _, _, attempt in taken} == {1}
    assert len({name[:2] for _, name, _ in taken}) > 1, "every replica took part"
    assert await replicas[1].runs.count_by_status() == {"success": 30}


# -- event log and bus -------------------------------------------------------------------


async def test_event_log_delete(storage: Storage) -> None:
    thread, other = new_id(), new_id()
    first = await storage.events.append(thread, "r", "values", b'{"a":1}')
    await storage.events.append(other, "r", "values", b"{}")
    assert await storage.events.read(thread, after=None) == [first]
    await storage.events.delete(thread)
    assert await storage.events.read(thread, after=None) == []
    assert len(await storage.events.read(other, after=None)) == 1
    fresh = await storage.events.append(thread, "r2", "end", b"{}")
    assert await storage.events.read(thread, after=None) == [fresh]


async def test_bus_reaches_subscribers(storage: Storage) -> None:
    got: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def handler(message: dict[str, Any]) -> None:
        await got.put(message)

    storage.bus.subscribe("wake", handler)
    await asyncio.sleep(0.05)  # a subscription across processes takes a moment
    await storage.bus.publish("wake", {"n": 1})
    assert await asyncio.wait_for(got.get(), 5) == {"n": 1}


# -- crons -------------------------------------------------------------------------------


def a_cron(**fields: Any) -> Cron:
    defaults: dict[str, Any] = {
        "cron_id": new_id(),
        "assistant_id": "agent",
        "thread_id": None,
        "schedule": "*/5 * * * *",
        "payload": {"input": {"q": 1}},
        "next_run_date": now() + timedelta(minutes=5),
    }
    return Cron(**{**defaults, **fields})


async def test_cron_records(storage: Storage) -> None:
    thread = new_id()
    past = now() - timedelta(minutes=1)
    a = a_cron(metadata={"owner": "ann"}, next_run_date=past, end_time=now(), timezone="UTC")
    b = a_cron(thread_id=thread, next_run_date=past - timedelta(minutes=1), user_id="u")
    c = a_cron(assistant_id="other", enabled=False, next_run_date=past + timedelta(seconds=1))
    d = a_cron(next_run_date=None, on_run_completed="keep")
    for cron in (a, b, c, d):
        await storage.crons.create(cron)
    stored = await storage.crons.get(a.cron_id)
    assert stored == a
    assert is_utc(stored.next_run_date)
    assert await storage.crons.get(new_id()) is None

    async def found(page: Page | None = None, **kw: Any) -> tuple[list[str], int]:
        page = page or Page(sort_order="asc")
        crons, total = await storage.crons.search(CronFilter(**kw), page)
        return [cron.cron_id for cron in crons], total

    assert await found() == ([a.cron_id, b.cron_id, c.cron_id, d.cron_id], 4)
    assert await found(assistant_id="other") == ([c.cron_id], 1)
    assert await found(thread_id=thread) == ([b.cron_id], 1)
    assert await found(enabled=False) == ([c.cron_id], 1)
    assert await found(metadata={"owner": "ann"}) == ([a.cron_id], 1)
    assert await found(page=Page(limit=2, offset=1, sort_by="next_run_date", sort_order="asc")) == (
        [b.cron_id, a.cron_id], 4)  # fmt: skip  # NULL dates sort first ascending
    assert [cron.cron_id for cron in await storage.crons.due(now())] == [b.cron_id, a.cron_id]

    a.enabled, a.payload = False, {"input": {"q": 2}}
    await storage.crons.update(a)
    assert await storage.crons.get(a.cron_id) == a
    assert await storage.crons.due(now()) == [b]
    assert await storage.crons.delete(b.cron_id)
    assert not await storage.crons.delete(b.cron_id)
    assert await storage.crons.due(now()) == []


async def test_cron_reschedule_fires_each_date_once(storage: Storage) -> None:
    due = now() - timedelta(seconds=1)
    cron = a_cron(next_run_date=due)
    await storage.crons.create(cron)

    fired = {i: replace(cron, next_run_date=due + timedelta(minutes=i)) for i in (1, 2, 3, 9)}

    results = await asyncio.gather(*(
        storage.crons.reschedule(fired[i], expected=due) for i in (1, 2, 3)))  # fmt: skip
    assert sorted(results) == [False, False, True]
    winner = 1 + results.index(True)
    assert await storage.crons.get(cron.cron_id) == fired[winner]
    assert not await storage.crons.reschedule(fired[9], expected=due)
    assert await storage.crons.reschedule(fired[9], expected=due + timedelta(minutes=winner))

    unscheduled = a_cron(next_run_date=None)
    await storage.crons.create(unscheduled)
    unscheduled.next_run_date = due
    assert not await storage.crons.reschedule(unscheduled, expected=now())
    assert await storage.crons.reschedule(unscheduled, expected=None)
    assert not await storage.crons.reschedule(a_cron(), expected=None)  # no such cron


# -- revisions ---------------------------------------------------------------------------


async def test_revisions(storage: Storage) -> None:
    assert await storage.revisions.active() is None
    assert await storage.revisions.list(limit=10, offset=0) == ([], 0)
    archive, sealed = bytes(range(256)) * 4, b"\x00sealed\xff"
    manifest = {"name": "demo", "files": ["agent.toml"]}
    records = [
        await storage.revisions.add(
            NewRevision("sha256:abc", manifest, archive, sealed, ["KEY", "TOKEN"])
        )
        for _ in range(3)
    ]
    assert [r.number for r in records] == [1, 2, 3]  # the same content deploys anew
    first = records[0]
    assert (first.revision_id, first.manifest, first.secret_names) == (
        "sha256:abc", manifest, ["KEY", "TOKEN"])  # fmt: skip
    assert is_utc(first.created_at)
    assert await storage.revisions.get(2) == records[1]
    assert await storage.revisions.get(4) is None

    newest, total = await storage.revisions.list(limit=2, offset=0)
    assert ([r.number for r in newest], total) == ([3, 2], 3)
    oldest, _ = await storage.revisions.list(limit=2, offset=2)
    assert oldest == [first]
    assert await storage.revisions.payload(1) == (archive, sealed)
    assert await storage.revisions.payload(4) is None

    await storage.revisions.activate(2)
    assert await storage.revisions.active() == 2
    await storage.revisions.activate(3)
    assert await storage.revisions.active() == 3
    with pytest.raises(LookupError, match="revision 9 does not exist"):
        await storage.revisions.activate(9)
    assert await storage.revisions.active() == 3
    fourth = await storage.revisions.add(NewRevision("sha256:def", {}, b"", b""))
    assert (fourth.number, fourth.secret_names) == (4, [])


# -- the checkpointer and the store ------------------------------------------------------


class Counter(TypedDict):
    log: Annotated[list[str], operator.add]


def counter_graph(checkpointer: Any) -> Any:
    """Two steps per invocation: the list channel is stored as a blob, not inline."""

    def count(state: Counter) -> dict[str, Any]:
        return {"log": [f"n={len(state['log'])}"]}

    builder = StateGraph(Counter)
    builder.add_node("count", count)
    builder.add_edge(START, "count")
    builder.add_edge("count", END)
    return builder.compile(checkpointer=checkpointer)


def config(thread_id: str, run_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": thread_id}
    if run_id is not None:
        configurable["run_id"] = run_id
    return {"configurable": configurable}


async def history(graph: Any, thread_id: str) -> list[Any]:
    return [snapshot async for snapshot in graph.aget_state_history(config(thread_id))]


async def test_checkpointer_extras(storage: Storage) -> None:
    saver, graph = storage.checkpointer, counter_graph(storage.checkpointer)
    source, copy = new_id(), new_id()
    await graph.ainvoke({"log": ["a"]}, config(source, "run-1"))
    after_first = (await graph.aget_state(config(source))).values
    await graph.ainvoke({"log": ["b"]}, config(source, "run-2"))
    values = (await graph.aget_state(config(source))).values
    assert values["log"] == ["a", "n=1", "b", "n=3"]
    steps = len(await history(graph, source))

    await saver.acopy_thread(source, copy)
    assert (await graph.aget_state(config(copy))).values == values
    assert len(await history(graph, copy)) == steps

    # Rolling back run-2 leaves the thread as run-1 left it; the copy keeps everything.
    await saver.adelete_for_run(source, "run-2")
    assert (await graph.aget_state(config(source))).values == after_first
    assert len(await history(graph, source)) < steps
    assert (await graph.aget_state(config(copy))).values == values

    await saver.aprune_to_latest(copy)
    assert [s.values for s in await history(graph, copy)] == [values]
    await graph.ainvoke({"log": ["c"]}, config(copy))  # the pruned thread goes on
    assert (await graph.aget_state(config(copy))).values["log"][-2:] == ["c", "n=5"]
    assert (await graph.aget_state(config(source))).values == after_first


def extend(state: list[str] | None, writes: Sequence[list[str]]) -> list[str]:
    return [*(state or []), *(item for write in writes for item in write)]


class DeltaCounter(TypedDict):
    log: Annotated[list[str], DeltaChannel(extend)]


async def test_delta_snapshot_then_prune_keeps_the_state(storage: Storage) -> None:
    """What POST /threads/prune (keep_latest) does: a `DeltaChannel` stores only writes, so
    the latest checkpoint first gets a snapshot of it (at its current version), then every
    other checkpoint goes."""
    builder = StateGraph(DeltaCounter)
    builder.add_node("count", lambda state: {"log": [f"n={len(state['log'])}"]})
    builder.add_edge(START, "count")
    builder.add_edge("count", END)
    saver, thread = storage.checkpointer, new_id()
    graph = builder.compile(checkpointer=saver)
    for word in ("a", "b", "c"):
        await graph.ainvoke({"log": [word]}, config(thread))
    values = (await graph.aget_state(config(thread))).values
    assert values["log"] == ["a", "n=1", "b", "n=3", "c", "n=5"]

    latest = await saver.aget_tuple(config(thread))
    checkpoint = dict(latest.checkpoint)
    checkpoint["channel_values"] = {
        **checkpoint["channel_values"],
        "log": _DeltaSnapshot(values["log"]),
    }
    metadata = {**latest.metadata, "counters_since_delta_snapshot": {}}
    await saver.aput({"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
                     checkpoint, metadata, {})  # fmt: skip
    await saver.aprune_to_latest(thread)
    assert [s.values for s in await history(graph, thread)] == [values]
    await graph.ainvoke({"log": ["d"]}, config(thread))
    assert (await graph.aget_state(config(thread))).values["log"][-2:] == ["d", "n=7"]


async def test_store_namespaces(storage: Storage) -> None:
    store = storage.store
    await store.aput(("users", "ann", "memories"), "a", {"text": "likes tea"})
    await store.aput(("users", "ann", "memories"), "b", {"text": "lives in Oslo"})
    await store.aput(("users", "anna", "memories"), "c", {"text": "another user"})
    item = await store.aget(("users", "ann", "memories"), "a")
    assert item is not None
    assert item.value == {"text": "likes tea"}
    found = await store.asearch(("users", "ann"))
    assert sorted(i.key for i in found) == ["a", "b"]  # by namespace element, not by text
    assert len(await store.asearch(("users",), limit=10)) == 3
    await store.adelete(("users", "ann", "memories"), "a")
    assert await store.aget(("users", "ann", "memories"), "a") is None
    namespaces = await store.alist_namespaces(prefix=("users",))
    assert sorted(namespaces) == [("users", "ann", "memories"), ("users", "anna", "memories")]


async def test_unreachable_database_is_reported_without_its_password() -> None:
    url = "postgresql://ann:s3cret@127.0.0.1:1/agentctl"
    with pytest.raises(
        RuntimeFailure, match=r"cannot connect to PostgreSQL at .*ann:\*\*\*@"
    ) as info:
        await PostgresStorage.open(url, events=cast(EventLog, None), bus=LocalBus())
    assert "s3cret" not in str(info.value)


# -- the platform's agents ---------------------------------------------------------------


async def test_agent_registry(storage: Storage) -> None:
    assert await storage.agents.list() == []
    old = AgentRecord("myagent", None)
    assert await storage.agents.add(old)
    assert await storage.agents.add(AgentRecord("helper", "helper"))
    assert not await storage.agents.add(AgentRecord("myagent", "myagent"))  # taken
    found = await storage.agents.get("myagent")
    assert found is not None
    assert found.namespace is None
    assert is_utc(found.created_at)
    assert [(a.name, a.namespace) for a in await storage.agents.list()] == [
        ("helper", "helper"), ("myagent", None)]  # fmt: skip
    assert await storage.agents.remove("helper")
    assert not await storage.agents.remove("helper")
    assert await storage.agents.get("helper") is None


async def test_an_agent_incarnation_and_its_sandbox_cleanups(storage: Storage) -> None:
    assert await storage.agents.add(AgentRecord("coder", "coder", incarnation="9f3c"))
    found = await storage.agents.get("coder")
    assert found is not None
    assert found.incarnation == "9f3c"
    assert await storage.agents.cleanups() == []

    first = SandboxCleanup("coder~~9f3c", "coder")
    await storage.agents.request_cleanup(first)
    await storage.agents.request_cleanup(SandboxCleanup("coder~~9f3c", "again"))  # kept as is
    await storage.agents.request_cleanup(SandboxCleanup("helper", "helper"))
    await storage.agents.cleanup_failed("coder~~9f3c", "cannot reach the sandbox service")
    await storage.agents.cleanup_failed("coder~~9f3c", "still not")
    kept, other = await storage.agents.cleanups()  # oldest first
    assert (kept.owner, kept.agent, kept.attempts, kept.last_error) == (
        "coder~~9f3c", "coder", 2, "still not")  # fmt: skip
    assert is_utc(kept.requested_at)
    assert kept.requested_at == first.requested_at
    assert (other.owner, other.attempts, other.last_error) == ("helper", 0, None)
    await storage.agents.cleanup_done("coder~~9f3c")
    assert [c.owner for c in await storage.agents.cleanups()] == ["helper"]


# -- users' connections to MCP servers ---------------------------------------------------

# Every byte value, a NUL first: sealed values come back byte for byte.
SEALED = b"\x00" + bytes(range(256)) + b"\xff\x00"


def a_connection(user: str, server: str, sealed: bytes = SEALED, **fields: Any) -> UserConnection:
    at = now()
    return UserConnection(user, server, sealed, ("read", "wrïte"), at + LATER, at, at, **fields)


def a_flow(user: str = "ann", server: str = "notes", **fields: Any) -> ConsentFlow:
    made = ConsentFlow(new_id(), user, server, new_id(), "agent", "pending", now(), now() + LATER)
    return replace(made, **fields)


def redirected(flow: ConsentFlow) -> ConsentFlow:
    state = new_id().replace("-", "")
    return replace(
        flow, status="redirected", state_hash=state, binding_hash="b" * 64, sealed=SEALED
    )


async def test_user_connections(storage: Storage) -> None:
    """Stored as given (sealed bytes exact, scopes in order, times in UTC), replaced with
    the version counted, swapped only from the version expected, listed, counted, deleted
    one or all of a user's."""
    connections = storage.connections
    assert await connections.get("ann", "notes") is None
    first = a_connection("ann", "notes", version=7)  # a new row starts at 1 whatever it says
    assert await connections.put(first, expected_version=None)
    stored = await connections.get("ann", "notes")
    assert stored == replace(first, version=1)
    assert stored is not None
    assert type(stored.sealed) is bytes
    assert stored.scopes == ("read", "wrïte")
    assert is_utc(stored.expires_at)
    assert is_utc(stored.connected_at)

    refreshed = replace(first, sealed=b"refreshed", expires_at=None, updated_at=now())
    assert await connections.put(refreshed, expected_version=None)  # replaces: version 2
    assert await connections.get("ann", "notes") == replace(refreshed, version=2)
    assert not await connections.put(replace(first, sealed=b"stale"), expected_version=1)
    assert await connections.put(replace(first, sealed=b"swapped"), expected_version=2)
    swapped = await connections.get("ann", "notes")
    assert swapped is not None
    assert (swapped.sealed, swapped.version) == (b"swapped", 3)
    # Nothing to swap: nothing is inserted.
    assert not await connections.put(a_connection("ann", "mail"), expected_version=1)
    assert await connections.get("ann", "mail") is None

    for user, server in [("ann", "mail"), ("ann", "calendar"), ("bob", "notes")]:
        assert await connections.put(a_connection(user, server), expected_version=None)
    assert [c.server for c in await connections.list("ann")] == ["calendar", "mail", "notes"]
    assert await connections.list("nobody") == []
    assert await connections.counts() == {"notes": 2, "mail": 1, "calendar": 1}

    assert await connections.delete("ann", "mail") == 1
    assert await connections.delete("ann", "mail") == 0
    assert await connections.delete("ann") == 2
    assert await connections.delete("ann") == 0
    assert await connections.counts() == {"notes": 1}
    assert await connections.get("bob", "notes") is not None


async def test_a_connection_is_deleted_only_at_the_version_read(storage: Storage) -> None:
    """A delete given the version it read removes nothing written since (a reconnection)."""
    connections = storage.connections
    assert await connections.put(a_connection("ann", "notes"), expected_version=None)
    assert await connections.put(a_connection("ann", "notes", b"again"), expected_version=None)
    assert await connections.delete("ann", "notes", version=1) == 0
    stored = await connections.get("ann", "notes")
    assert stored is not None
    assert (stored.sealed, stored.version) == (b"again", 2)
    assert await connections.delete("ann", "mail", version=1) == 0
    assert await connections.delete("ann", "notes", version=2) == 1
    assert await connections.get("ann", "notes") is None
    with pytest.raises(ValueError, match="server"):
        await connections.delete("ann", version=1)


async def test_a_connection_swap_races(storage: Storage) -> None:
    """Two writers replacing a token from the same version at once: one wins, and the
    stored token is the winner's."""
    connections = storage.connections
    for round_ in range(10):
        user = f"user{round_}"
        assert await connections.put(a_connection(user, "notes"), expected_version=None)
        one, two = a_connection(user, "notes", b"one"), a_connection(user, "notes", b"two")
        won = await asyncio.gather(
            connections.put(one, expected_version=1), connections.put(two, expected_version=1)
        )
        assert sorted(won) == [False, True]
        stored = await connections.get(user, "notes")
        assert stored is not None
        assert (stored.sealed, stored.version) == (b"one" if won[0] else b"two", 2)


async def test_consent_flows(storage: Storage) -> None:
    """Stored as given, found by the hash of their state once redirected, each step taken
    once, purged once expired."""
    connections = storage.connections
    flow = a_flow(thread_id=None, assistant_id=None)
    await connections.add_flow(flow)
    assert await connections.get_flow(flow.flow_id) == flow
    assert await connections.get_flow("nope") is None

    sent = redirected(flow)
    assert sent.state_hash is not None
    assert await connections.flow_by_state(sent.state_hash) is None
    assert await connections.advance_flow(sent, from_status="pending")
    assert not await connections.advance_flow(sent, from_status="pending")  # once
    found = await connections.flow_by_state(sent.state_hash)
    assert found == sent
    assert found is not None
    assert type(found.sealed) is bytes
    assert is_utc(found.expires_at)
    assert await connections.flow_by_state("0" * 64) is None

    done = replace(sent, status="done")
    assert await connections.advance_flow(done, from_status="redirected")
    assert not await connections.advance_flow(done, from_status="redirected")
    assert await connections.get_flow(flow.flow_id) == done
    assert not await connections.advance_flow(a_flow(), from_status="pending")  # never added

    expired = [a_flow(expires_at=now() - timedelta(minutes=m)) for m in (1, 2)]
    for old in expired:
        await connections.add_flow(old)
    assert await connections.purge_flows(now() - timedelta(seconds=30)) == 2
    assert await connections.purge_flows(now()) == 0
    assert [await connections.get_flow(old.flow_id) for old in expired] == [None, None]
    assert await connections.get_flow(flow.flow_id) == done


async def test_a_users_consent_flows_are_deleted_per_server_or_all(storage: Storage) -> None:
    """Whatever their status; other users' flows stay."""
    connections = storage.connections
    notes, sent, mail, bobs = (
        a_flow(),
        redirected(a_flow()),
        a_flow(server="mail"),
        a_flow(user="bob"),
    )
    for flow in (notes, sent, mail, bobs):
        await connections.add_flow(flow)
    assert await connections.delete_flows("ann", "notes") == 2
    assert await connections.get_flow(notes.flow_id) is None
    assert sent.state_hash is not None
    assert await connections.flow_by_state(sent.state_hash) is None
    assert await connections.get_flow(mail.flow_id) == mail
    assert await connections.delete_flows("ann") == 1
    assert await connections.delete_flows("ann") == 0
    assert await connections.get_flow(bobs.flow_id) == bobs


async def test_a_consent_flow_is_used_once_under_races(storage: Storage) -> None:
    """Two callbacks completing one flow at once: exactly one advances it."""
    connections = storage.connections
    for _ in range(10):
        flow = redirected(a_flow())
        await connections.add_flow(flow)
        won = await asyncio.gather(
            connections.advance_flow(replace(flow, status="done"), from_status="redirected"),
            connections.advance_flow(replace(flow, status="failed"), from_status="redirected"),
        )
        assert sorted(won) == [False, True]
        stored = await connections.get_flow(flow.flow_id)
        assert stored is not None
        assert stored.status == ("done" if won[0] else "failed")


async def test_replicas_racing_on_one_connection_and_one_flow(
    database_url: str, open_postgres: OpenPostgres
) -> None:
    """Two replicas each swap the same token from one version and complete the same flow
    while the rows are held (every statement waits on them); once released, each waiting
    statement checks the row again: one swap and one completion land."""
    one, two = await asyncio.gather(open_postgres(database_url), open_postgres(database_url))
    assert await one.connections.put(a_connection("ann", "notes"), expected_version=None)
    flow = redirected(a_flow())
    await one.connections.add_flow(flow)
    async with (
        await psycopg.AsyncConnection.connect(database_url) as holder,
        await psycopg.AsyncConnection.connect(database_url, autocommit=True) as watcher,
    ):

        async def waiting() -> bool:
            cursor = await watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()"
            )
            row = await cursor.fetchone()
            return row is not None and row[0] == 4

        async with holder.transaction():
            await holder.execute("SELECT 1 FROM user_connections FOR UPDATE")
            await holder.execute("SELECT 1 FROM consent_flows FOR UPDATE")
            racing = asyncio.gather(
                one.connections.put(a_connection("ann", "notes", b"1"), expected_version=1),
                two.connections.put(a_connection("ann", "notes", b"2"), expected_version=1),
                one.connections.advance_flow(
                    replace(flow, status="done"), from_status="redirected"
                ),
                two.connections.advance_flow(
                    replace(flow, status="failed"), from_status="redirected"
                ),
            )
            await eventually(waiting, what="the four statements waiting on the rows")
        swapped_one, swapped_two, done, failed = await racing
    assert sorted([swapped_one, swapped_two]) == [False, True]
    assert sorted([done, failed]) == [False, True]
    stored = await two.connections.get("ann", "notes")
    assert stored is not None
    assert (stored.sealed, stored.version) == (b"1" if swapped_one else b"2", 2)
    stored_flow = await two.connections.get_flow(flow.flow_id)
    assert stored_flow is not None
    assert stored_flow.status == ("done" if done else "failed")


async def test_oauth_clients_and_tool_catalogs(storage: Storage) -> None:
    """A client registration per server and issuer (sealed bytes exact), replaced when
    registered again; a catalog per server, its tools as listed (order and keys' order)."""
    connections = storage.connections
    assert await connections.get_client("notes", "https://auth.example.com") is None
    await connections.put_client("notes", "https://auth.example.com", SEALED)
    await connections.put_client("notes", "https://other.example.com", b"other")
    found = await connections.get_client("notes", "https://auth.example.com")
    assert (found, type(found)) == (SEALED, bytes)
    await connections.put_client("notes", "https://auth.example.com", b"again")
    assert await connections.get_client("notes", "https://auth.example.com") == b"again"
    assert await connections.get_client("notes", "https://other.example.com") == b"other"
    assert await connections.get_client("mail", "https://auth.example.com") is None

    assert await connections.get_catalog("notes") is None
    schema = {"type": "object", "properties": {"zeta": {"type": "string"}, "a": {}}}
    tools = [
        {"name": "search", "description": "Search notes ✓", "inputSchema": schema},
        {"name": "add", "inputSchema": {"type": "object"}, "annotations": {"title": "Add"}},
    ]
    await connections.put_catalog("notes", tools)
    listed = await connections.get_catalog("notes")
    assert listed == tools
    assert listed is not None
    assert list(listed[0]["inputSchema"]["properties"]) == ["zeta", "a"]
    assert list(listed[1]) == ["name", "inputSchema", "annotations"]
    await connections.put_catalog("notes", tools[1:])
    assert await connections.get_catalog("notes") == tools[1:]
    await connections.put_catalog("mail", [])
    assert await connections.get_catalog("mail") == []


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_database_of_before_gets_the_connection_tables(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database at the schema version before connections is migrated when opened: its
    data stays, the new tables are there."""
    module = {"sqlite": sqlite_database, "postgres": postgres_database}[kind]
    before = next(i for i, script in enumerate(module.MIGRATIONS) if "user_connections" in script)
    monkeypatch.setattr(module, "MIGRATIONS", module.MIGRATIONS[:before])
    task = A2ATask("t1", new_id(), "ann", "TASK_STATE_COMPLETED", 1, {"id": "t1"})
    async with contextlib.AsyncExitStack() as stack:
        if kind == "sqlite":
            older = SqliteStorage(tmp_path / "agentctl.db", tmp_path / "store.db")
            await older.a2a_tasks.put(task)
            await older.close()
            monkeypatch.undo()
            storage: Storage = SqliteStorage(tmp_path / "agentctl.db", tmp_path / "store.db")
            stack.push_async_callback(storage.close)
        else:
            url = request.getfixturevalue("database_url")
            open_postgres = await stack.enter_async_context(postgres_opener(request))
            older_pg = await open_postgres(url)
            await older_pg.a2a_tasks.put(task)
            with pytest.raises(Exception, match="user_connections"):
                await older_pg.connections.get("ann", "notes")
            monkeypatch.undo()
            storage = await open_postgres(url)
        assert await storage.a2a_tasks.get("t1") == task
        assert await storage.connections.put(a_connection("ann", "notes"), expected_version=None)
        assert await storage.connections.counts() == {"notes": 1}
        flow = a_flow()
        await storage.connections.add_flow(flow)
        assert await storage.connections.get_flow(flow.flow_id) == flow
        await storage.connections.put_client("notes", "issuer", b"client")
        await storage.connections.put_catalog("notes", [{"name": "search"}])
        assert await storage.connections.get_catalog("notes") == [{"name": "search"}]
