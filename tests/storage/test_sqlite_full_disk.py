"""The embedded database on a disk that fills up (a real tmpfs, filled to the last byte):
nothing accepted is lost. A commit the full disk refuses leaves every write of its
transaction kept and readable here; meanwhile runs' appends are taken and any other write is
refused (`DiskUnavailable`, which requests answer 503); once the disk has room, the next try
stores it all."""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentctl.errors import DiskUnavailable
from agentctl.storage.base import Thread, ThreadUpdate
from agentctl.storage.sqlite import SqliteStorage
from agentctl.storage.sqlite.events import INSERT_EVENT
from tests.conftest import eventually
from tests.small_disk import SmallDisk

BLOB = b"x" * 8000  # 150 of them: more than the full disk's WAL can take, less than the cache


def event(seq: int) -> tuple[object, ...]:
    return ("t", 1, seq, "r", "values", BLOB)


def stored(path: Path, query: str) -> list[tuple[object, ...]]:
    """What another connection reads in the file: only what is committed."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as other:
        return other.execute(query).fetchall()


@pytest.fixture
async def storage(small_disk: SmallDisk, tmp_path: Path) -> AsyncIterator[SqliteStorage]:
    folder = small_disk.mount(tmp_path / "data")
    storage = SqliteStorage(folder / "agentctl.db", folder / "store.db")
    yield storage
    await storage.close()


async def test_writes_a_full_disk_refused_are_kept_and_stored_once_it_has_room(
    storage: SqliteStorage, small_disk: SmallDisk, caplog: pytest.LogCaptureFixture
) -> None:
    path, db = storage.path, storage.database
    assert await storage.threads.create(Thread("t"))
    small_disk.fill()
    # One batch, as a run makes it: a change of the thread and many appends.
    await storage.threads.update("t", ThreadUpdate(metadata={"kept": True}))
    for seq in range(150):
        db.defer(INSERT_EVENT, [event(seq)])
    with (
        caplog.at_level(logging.WARNING, "agentctl.storage"),
        pytest.raises(DiskUnavailable) as refused,
    ):
        db.commit()
    # Kept: this connection reads them all, the file holds none of them.
    assert db.conn.execute("SELECT COUNT(*) FROM events").fetchone() == (150,)
    assert (await storage.threads.get("t")).metadata == {"kept": True}  # type: ignore[union-attr]
    assert stored(path, "SELECT COUNT(*) FROM events") == [(0,)]
    assert str(refused.value).startswith(f"the disk holding {path.parent} is full")
    # Meanwhile a write is refused at once, and runs' appends are taken.
    with pytest.raises(DiskUnavailable, match="so the request was not carried out"):
        await storage.threads.create(Thread("other"))
    db.defer(INSERT_EVENT, [event(150)])
    assert await storage.unavailable() == [f"the disk holding {path.parent}"]

    small_disk.free()
    with caplog.at_level(logging.WARNING, "agentctl.storage"):
        assert await eventually(lambda: _unavailable(storage), what="the disk back") == "back"
        await storage.sync()
    assert stored(path, "SELECT COUNT(*) FROM events") == [(151,)]
    [(metadata,)] = stored(path, "SELECT metadata FROM threads WHERE thread_id = 't'")
    assert json.loads(str(metadata)) == {"kept": True}
    full = [r.message for r in caplog.records if "is full" in r.message]
    back = [r.message for r in caplog.records if "takes writes again" in r.message]
    assert len(full) == 1, caplog.text  # the outage, logged once when it begins ...
    assert len(back) == 1, caplog.text  # ... and once when it ends
    assert await storage.threads.create(Thread("other"))  # writes are taken again


async def _unavailable(storage: SqliteStorage) -> str | None:
    return "back" if await storage.unavailable() == [] else None


async def test_a_write_refused_at_its_own_commit_is_not_stored_but_the_others_are(
    storage: SqliteStorage, small_disk: SmallDisk
) -> None:
    """A client told its write failed (e.g. a run not accepted: 503) never finds it stored
    later, while what was written before it in the same transaction is."""
    path, db = storage.path, storage.database
    for seq in range(150):
        db.defer(INSERT_EVENT, [event(seq)])
    small_disk.fill()
    with pytest.raises(DiskUnavailable):
        await storage.threads.create(Thread("refused"))  # committed at once: it fails
    assert await storage.threads.get("refused") is None
    small_disk.free()
    await eventually(lambda: _unavailable(storage), what="the disk back")
    db.commit()
    assert stored(path, "SELECT COUNT(*) FROM events") == [(150,)]
    assert stored(path, "SELECT COUNT(*) FROM threads") == [(0,)]


async def test_a_store_write_on_a_full_disk_is_refused_and_taken_again_later(
    storage: SqliteStorage, small_disk: SmallDisk
) -> None:
    await storage.store.aput(("notes",), "before", {"text": "x" * 1000})
    small_disk.fill()
    with pytest.raises(DiskUnavailable, match=f"the disk holding {storage.path.parent} is full"):
        await storage.store.aput(("notes",), "during", {"text": "y" * 400_000})
    assert await storage.store.aget(("notes",), "during") is None
    assert (await storage.store.aget(("notes",), "before")) is not None
    small_disk.free()
    await eventually(lambda: _unavailable(storage), what="the disk back")
    await storage.store.aput(("notes",), "after", {"text": "z"})
    assert (await storage.store.aget(("notes",), "after")) is not None
