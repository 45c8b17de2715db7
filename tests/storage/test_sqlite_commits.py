"""The embedded database's deferred appends (`storage/sqlite/database.py`): rows appended on
the loop reach the file with the shared commit, readers see them before it, and a failure to
write them loses nothing silently."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

import pytest

from agentctl.storage.sqlite import database
from agentctl.storage.sqlite.database import Database

ROW = "INSERT INTO events (thread_id, ms, seq, run_id, event, data) VALUES (?, ?, ?, ?, ?, ?)"


def event(seq: int, data: bytes | None = b"{}") -> tuple[object, ...]:
    return ("t", 1, seq, "r", "values", data)


def stored(path: Path) -> list[int]:
    """The events' seq as another connection sees the file: only what is committed."""
    with sqlite3.connect(path) as other:
        return [seq for (seq,) in other.execute("SELECT seq FROM events ORDER BY seq")]


async def test_appends_are_committed_together_and_read_before(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    db = Database.open(path)
    try:
        for seq in range(3):
            db.defer(ROW, [event(seq)])
        assert stored(path) == []  # not yet committed ...
        db.flush()  # ... but a reader on this connection sees them
        assert db.conn.execute("SELECT COUNT(*) FROM events").fetchone() == (3,)
        await asyncio.sleep(database.COMMIT_DELAY * 5)
        assert stored(path) == [0, 1, 2]
    finally:
        db.close()


async def test_refused_rows_are_dropped_whole_and_the_next_writer_hears_of_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "a.db"
    db = Database.open(path)
    try:
        db.defer(ROW, [event(0), event(1, data=None)])  # data is NOT NULL
        with caplog.at_level(logging.ERROR, "agentctl.storage"):
            db.flush()
        assert "refused 2 rows" in caplog.text
        assert db.conn.execute("SELECT COUNT(*) FROM events").fetchone() == (0,)  # none of them
        with pytest.raises(sqlite3.DatabaseError, match="refused earlier writes"):
            db.defer(ROW, [event(2)])
        db.defer(ROW, [event(3)])  # told once; writing goes on
        db.commit()
        assert stored(path) == [3]
    finally:
        db.close()


async def test_rows_that_cannot_be_written_yet_stay_queued(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    db = Database.open(path)
    db.conn.execute("PRAGMA busy_timeout=0")
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        db.defer(ROW, [event(0)])
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the file
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            db.commit()
        holder.execute("COMMIT")
        db.commit()
        assert stored(path) == [0]
    finally:
        holder.close()
        db.close()


async def test_a_database_opened_after_one_closed_commits_its_own_writes(tmp_path: Path) -> None:
    """Each `Database` keeps its own commit timer: one scheduled for a closed database
    neither commits for, nor holds back, the commits of one opened after it."""
    first = Database.open(tmp_path / "a.db")
    first.defer(ROW, [event(0)])  # schedules a commit ...
    first.close()  # ... that now finds the connection closed
    second = Database.open(tmp_path / "b.db")
    try:
        second.defer(ROW, [event(1)])
        await asyncio.sleep(database.COMMIT_DELAY * 5)
        assert stored(tmp_path / "a.db") == [0]  # committed by close
        assert stored(tmp_path / "b.db") == [1]
    finally:
        second.close()


async def test_a_commit_scheduled_before_close_warns_only_of_writes_made_after(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Closing commits everything: the commit scheduled before finds nothing to drop and
    says nothing (a clean stop of `agentctl dev` printed "writes ... were dropped"). A write
    made after close is dropped, and that is said."""
    db = Database.open(tmp_path / "a.db")
    db.defer(ROW, [event(0)])  # schedules a commit ...
    with caplog.at_level(logging.WARNING, "agentctl.storage"):
        db.close()  # ... which close makes
        await asyncio.sleep(database.COMMIT_DELAY * 5)
        assert caplog.text == ""
        db.defer(ROW, [event(1)])
        await asyncio.sleep(database.COMMIT_DELAY * 5)
    assert "writes made after the embedded database closed were dropped" in caplog.text
    assert stored(tmp_path / "a.db") == [0]
