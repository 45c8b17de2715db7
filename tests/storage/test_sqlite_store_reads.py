"""The embedded store answers repeated reads from memory (`LoopSqliteStore`): a write of any
kind, from the loop or from a thread, is seen by the next read, and a read racing a write is
never kept."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentctl.storage.sqlite.checkpointer import LoopSqliteStore
from agentctl.storage.sqlite.database import Database

NS = ("memories", "demo", "shared", "files")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LoopSqliteStore]:
    db = Database.open(tmp_path / "store.db")
    store = LoopSqliteStore(db.conn)
    store.setup()
    yield store
    db.close()


def keys(items: list[Any]) -> list[str]:
    return sorted(item.key for item in items)


async def test_every_write_is_seen_by_the_next_read(store: LoopSqliteStore) -> None:
    await store.aput(NS, "a", {"content": "one"})
    assert keys(await store.asearch(NS)) == ["a"]
    assert (await store.aget(NS, "a")).value == {"content": "one"}

    await store.aput(NS, "b", {"content": "two"})  # a new item
    assert keys(await store.asearch(NS)) == ["a", "b"]
    await store.aput(NS, "a", {"content": "edited"})  # an edit
    assert (await store.aget(NS, "a")).value == {"content": "edited"}
    await store.adelete(NS, "b")  # a delete
    assert keys(await store.asearch(NS)) == ["a"]
    assert await store.aget(NS, "b") is None
    assert await store.alist_namespaces(prefix=("memories",)) == [NS]


async def test_reads_and_writes_from_threads(store: LoopSqliteStore) -> None:
    """deepagents reads through the synchronous API in worker threads."""
    await store.aput(NS, "a", {"content": "one"})
    assert keys(await asyncio.to_thread(store.search, NS)) == ["a"]
    await asyncio.to_thread(store.put, NS, "b", {"content": "two"})
    assert keys(await store.asearch(NS)) == ["a", "b"]
    assert keys(await asyncio.to_thread(store.search, NS)) == ["a", "b"]


def test_a_read_racing_a_write_is_not_kept(store: LoopSqliteStore) -> None:
    """A read that fetched the old rows while a write went on answers with them once, but
    the next read sees the write."""
    store.put(NS, "a", {"content": "old"})
    fetched, resume = threading.Event(), threading.Event()
    original = LoopSqliteStore.__mro__[1].batch  # the library's

    def slow_batch(self: LoopSqliteStore, ops: Any) -> Any:
        result = original(self, ops)
        if threading.current_thread().name == "reader":
            fetched.set()
            resume.wait(5)
        return result

    answers: list[Any] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LoopSqliteStore.__mro__[1], "batch", slow_batch)
        reader = threading.Thread(target=lambda: answers.append(store.get(NS, "a")), name="reader")
        reader.start()
        assert fetched.wait(5)
        store.put(NS, "a", {"content": "new"})  # while the reader holds the old row
        resume.set()
        reader.join(5)
    assert answers[0].value == {"content": "old"}
    assert store.get(NS, "a").value == {"content": "new"}
