"""Storage namespaces (one per agent of a platform): on SQLite and on PostgreSQL + Redis,
what one namespace writes is invisible from another, the default namespace keeps the data
of before, odd names are safe and apart, and a dropped namespace is gone, alone."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from redis.asyncio import Redis

from agentctl.errors import Unprocessable
from agentctl.metering.ledger import Ledger, Tokens
from agentctl.settings import Settings
from agentctl.storage.base import (
    Assistant,
    AssistantFilter,
    CronFilter,
    NewRevision,
    Page,
    Storage,
    ThreadFilter,
    new_id,
)
from agentctl.storage.namespace import Namespace
from agentctl.storage.open import Close, Dropped, drop_namespace, open_storage
from agentctl.storage.postgres.database import drop_schema

from .test_conformance import (
    a_connection,
    a_cron,
    add_run,
    add_thread,
    claim_id,
    config,
    counter_graph,
)

HOSTILE = "\"'; DROP SCHEMA public CASCADE; -- ✓ ünïcødé " + "x" * 200
MEMORY = ("memories", "ann", "files")


class Opener:
    """Opens storages as `agentctl serve` does, from settings; closes them (at the end, or
    when asked)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.kind = "sqlite" if settings.database_url is None else "postgres"
        self._closes: dict[int, tuple[Storage, Close]] = {}

    async def open(self, namespace: str | None) -> Storage:
        storage, close = await open_storage(self.settings, namespace)
        self._closes[id(storage)] = (storage, close)
        return storage

    async def close(self, storage: Storage) -> None:
        storage, close = self._closes.pop(id(storage))
        await storage.close()
        await close()

    async def close_all(self) -> None:
        for storage, _ in list(self._closes.values())[::-1]:
            await self.close(storage)


@pytest.fixture(params=["sqlite", "postgres"])
async def opener(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    env = {"AGENTCTL_DATA_DIR": str(tmp_path / "data"), "AGENTCTL_DB_POOL_SIZE": "4"}
    if request.param == "postgres":
        env["DATABASE_URL"] = request.getfixturevalue("database_url")
        env["REDIS_URL"] = request.getfixturevalue("redis_server_url")
        env["AGENTCTL_REDIS_PREFIX"] = request.getfixturevalue("redis_prefix")
    spaces = Opener(Settings.from_env(env))
    yield spaces
    await spaces.close_all()


async def write_everything(storage: Storage) -> dict[str, str]:
    """One record of each kind; their ids."""
    assistant = new_id()
    await storage.assistants.put(Assistant(assistant, "agent", "mine"))
    thread = await add_thread(storage, owner="ann")
    run = await add_run(storage, thread.thread_id)
    cron = a_cron(assistant_id=assistant)
    await storage.crons.create(cron)
    await storage.revisions.add(NewRevision("sha256:abc", {}, b"archive", b"sealed"))
    await storage.store.aput(MEMORY, "note", {"text": "likes tea"})
    await counter_graph(storage.checkpointer).ainvoke({"log": ["a"]}, config(thread.thread_id))
    event = await storage.events.append(thread.thread_id, run.run_id, "values", b"{}")
    await storage.connections.put(a_connection("ann", "notes"), expected_version=None)
    return {
        "assistant": assistant,
        "thread": thread.thread_id,
        "run": run.run_id,
        "cron": cron.cron_id,
        "event": event.id,
    }


async def sees(storage: Storage, written: dict[str, str]) -> dict[str, Any]:
    """What `storage` finds of the records `write_everything` made (in any namespace)."""
    thread = written["thread"]
    return {
        "assistant": await storage.assistants.get(written["assistant"]) is not None,
        "assistants": (await storage.assistants.search(AssistantFilter(), Page()))[1],
        "thread": await storage.threads.get(thread) is not None,
        "threads": (await storage.threads.search(ThreadFilter(), Page()))[1],
        "run": await storage.runs.get(written["run"]) is not None,
        "runs": sum((await storage.runs.count_by_status()).values()),
        "cron": await storage.crons.get(written["cron"]) is not None,
        "crons": (await storage.crons.search(CronFilter(), Page()))[1],
        "revisions": (await storage.revisions.list(limit=10, offset=0))[1],
        "store": len(await storage.store.asearch(("memories",))),
        "checkpoints": bool([c async for c in storage.checkpointer.alist(config(thread))]),
        "events": [event.id for event in await storage.events.read(thread, after=None)],
        "connections": sum((await storage.connections.counts()).values()),
    }


NOTHING = {
    "assistant": False,
    "assistants": 0,
    "thread": False,
    "threads": 0,
    "run": False,
    "runs": 0,
    "cron": False,
    "crons": 0,
    "revisions": 0,
    "store": 0,
    "checkpoints": False,
    "events": [],
    "connections": 0,
}


def everything(written: dict[str, str]) -> dict[str, Any]:
    """What `sees` finds in the namespace where `write_everything` wrote `written` alone."""
    return {
        key: True if value is False else [written["event"]] if value == [] else 1
        for key, value in NOTHING.items()
    }


async def test_namespaces_see_nothing_of_each_other(opener: Opener) -> None:
    one, two = await opener.open("one"), await opener.open("two")
    written = await write_everything(one)
    assert await sees(one, written) == everything(written)
    assert await sees(two, written) == NOTHING
    assert await claim_id(two) is None  # claims look at their namespace's runs only
    assert await claim_id(one) == written["run"]

    heard: dict[str, asyncio.Queue[Any]] = {"one": asyncio.Queue(), "two": asyncio.Queue()}
    for name, storage in (("one", one), ("two", two)):

        async def handler(message: Any, name: str = name) -> None:
            await heard[name].put(message)

        storage.bus.subscribe("wake", handler)
    for storage in (one, two):
        ready = getattr(storage.bus, "ready", None)
        if ready is not None:
            assert await ready("wake")
    await one.bus.publish("wake", {"n": 1})
    await two.bus.publish("wake", {"n": 2})
    assert await asyncio.wait_for(heard["one"].get(), 5) == {"n": 1}
    assert await asyncio.wait_for(heard["two"].get(), 5) == {"n": 2}
    await asyncio.sleep(0.2)  # a message across namespaces would have arrived by now
    assert heard["one"].empty()
    assert heard["two"].empty()

    # Live subscribers of a thread hear only their namespace's events.
    here, there = one.events.subscribe(written["thread"]), two.events.subscribe(written["thread"])
    await asyncio.sleep(0.2)  # subscribed across processes
    event = await one.events.append(written["thread"], written["run"], "values", b"{}")
    assert await asyncio.wait_for(here.next(), 5) == event
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(there.next(), 0.3)


async def test_the_default_namespace_keeps_the_data_of_before(opener: Opener) -> None:
    before = await opener.open(None)
    written = await write_everything(before)
    await opener.close(before)

    again = await opener.open(None)
    assert await sees(again, written) == everything(written)
    assert await sees(await opener.open("agent"), written) == NOTHING
    data_dir = Path(opener.settings.data_dir)
    if opener.kind == "sqlite":
        assert (data_dir / "agentctl.db").is_file()
        assert (data_dir / "store.db").is_file()
        assert (Namespace.of("agent").folder(data_dir) / "agentctl.db").is_file()
    else:
        assert opener.settings.database_url is not None
        with psycopg.connect(opener.settings.database_url) as conn:
            tables = conn.execute(
                "SELECT table_schema, count(*) FROM information_schema.tables"
                " WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
                " GROUP BY table_schema ORDER BY table_schema"
            ).fetchall()
        # The same tables in each: the default schema's and the namespace's own.
        assert [schema for schema, _ in tables] == [Namespace.of("agent").schema, "public"]
        assert tables[0][1] == tables[1][1]


async def test_odd_names_are_safe_and_apart(opener: Opener) -> None:
    names = ["My Agent", "my-agent", "my_agent", HOSTILE, "日本語", "Ünï"]
    storages = [await opener.open(name) for name in names]
    threads = [
        await add_thread(storage, name=name) for storage, name in zip(storages, names, strict=True)
    ]
    for storage, thread, name in zip(storages, threads, names, strict=True):
        found, total = await storage.threads.search(ThreadFilter(), Page())
        assert (total, found[0].thread_id, found[0].metadata) == (
            1,
            thread.thread_id,
            {"name": name},
        )
    if opener.kind == "postgres":
        assert opener.settings.database_url is not None
        with psycopg.connect(opener.settings.database_url) as conn:
            schemas = {row[0] for row in conn.execute("SELECT nspname FROM pg_namespace")}
            public = conn.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
            ).fetchone()
        assert {Namespace.of(name).schema for name in names} <= schemas
        assert public == (0,)  # nothing of any namespace's lands in the default schema


def test_namespace_names() -> None:
    slugs = {name: Namespace.of(name) for name in ["My Agent", "my-agent", "my_agent", HOSTILE]}
    assert len({space.slug for space in slugs.values()}) == 4  # the hash tells them apart
    assert all(space.slug.startswith("my_agent_") for name, space in slugs.items() if "y" in name)
    for space in [*slugs.values(), Namespace.of("日本語")]:
        assert re.fullmatch(r"agent_[a-z0-9_]+", space.schema)
        assert len(space.schema.encode()) <= 63
        assert space.redis_prefix("agentctl") == f"agentctl:agent:{space.slug}"
        assert space.folder(Path("/data")) == Path("/data/agents") / space.slug
    assert Namespace.of("Café").slug.startswith("cafe_")
    assert Namespace.of("My Agent") == Namespace.of("My Agent")
    with pytest.raises(Unprocessable, match="needs a name"):
        Namespace.of("")


async def redis_keys(opener: Opener) -> list[str]:
    assert opener.settings.redis_url is not None
    client = Redis.from_url(opener.settings.redis_url)
    try:
        pattern = f"{opener.settings.redis_prefix}:*"
        return sorted([key.decode() async for key in client.scan_iter(match=pattern)])
    finally:
        await client.aclose()


async def test_drop_namespace_removes_it_alone(opener: Opener) -> None:
    doomed = await opener.open("doomed")
    kept = {name: await opener.open(name) for name in (None, "kept")}
    doomed_ids = await write_everything(doomed)
    kept_ids = {name: await write_everything(storage) for name, storage in kept.items()}
    await opener.close(doomed)
    space = Namespace.of("doomed")
    if opener.kind == "postgres":
        keys = await redis_keys(opener)
        ours = [
            key for key in keys if key.startswith(space.redis_prefix(opener.settings.redis_prefix))
        ]
        assert len(ours) == 2  # the thread's stream and its writers' hash
        assert len(keys) == 6

    dropped = await drop_namespace(opener.settings, "doomed")
    folder = space.folder(Path(opener.settings.data_dir))
    if opener.kind == "postgres":
        assert dropped == Dropped(space.schema, 2, None)
        assert len(await redis_keys(opener)) == 4
    else:
        assert dropped == Dropped(None, 0, folder)
    assert not folder.exists()
    for name, storage in kept.items():
        assert await sees(storage, kept_ids[name]) == everything(kept_ids[name])
    assert await sees(await opener.open("doomed"), doomed_ids) == NOTHING  # anew, empty

    with pytest.raises(Unprocessable, match="default storage namespace cannot be dropped"):
        await drop_namespace(opener.settings, None)


async def test_dropping_a_namespace_that_never_was(opener: Opener) -> None:
    assert await drop_namespace(opener.settings, "never") == Dropped(None, 0, None)


@pytest.mark.parametrize("opener", ["postgres"], indirect=True)
async def test_concurrent_opens_of_new_namespaces(opener: Opener) -> None:
    """Replicas starting together: each new schema is created and migrated once, under its
    own lock, while other namespaces migrate alongside."""
    names = ["fresh", "fresh", "fresh", "other", "third"]
    storages = await asyncio.gather(*(opener.open(name) for name in names))
    thread = await add_thread(storages[0])
    for storage, name in zip(storages, names, strict=True):
        found = await storage.threads.get(thread.thread_id)
        assert (found is not None) == (name == "fresh")


@pytest.mark.parametrize("opener", ["postgres"], indirect=True)
async def test_a_drop_waits_for_the_other_replicas_to_let_go(opener: Opener) -> None:
    """Another replica still serves the agent: the drop waits until its pool is closed;
    a pool never closed (a replica that missed the deletion) has its connections ended."""
    schema = Namespace.of("busy").schema
    elsewhere = await opener.open("busy")
    await add_thread(elsewhere)
    drop = asyncio.create_task(drop_namespace(opener.settings, "busy"))
    await asyncio.sleep(0.5)
    assert not drop.done()  # waiting for the other replica
    await opener.close(elsewhere)
    assert (await asyncio.wait_for(drop, 5)).schema == schema

    url = opener.settings.database_url
    assert url is not None
    stuck = await opener.open("stuck")
    await add_thread(stuck)
    stuck_schema = Namespace.of("stuck").schema
    assert await drop_schema(url, stuck_schema, wait=0.3)
    with psycopg.connect(url) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (stuck_schema,)
        ).fetchone()
    assert left == (0,)


async def test_usage_and_traces_are_kept_per_namespace(opener: Opener) -> None:
    """Each agent of a platform keeps what its runs spent in its own storage."""
    one, two = await opener.open("one"), await opener.open("two")
    run = await add_run(one, (await add_thread(one)).thread_id)
    ledger = Ledger(run.run_id, run.thread_id, "one", user_id="ann")
    ledger.count("openai:gpt-4o-mini", Tokens(10, 5))
    await one.runs.finish(run.run_id, "success", usage=ledger)
    today = datetime.now(UTC).date()
    [row] = await one.usage.summary("user", today, today)
    assert (row.key, row.tokens.total, row.runs) == ("ann", 15, 1)
    assert await one.usage.trace(run.run_id) is not None
    assert await two.usage.summary("user", today, today) == []
    assert await two.usage.trace(run.run_id) is None
