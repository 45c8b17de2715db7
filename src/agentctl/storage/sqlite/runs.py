"""Runs in the embedded database."""

from __future__ import annotations

import builtins
import sqlite3
import weakref
from datetime import datetime, timedelta

from agentctl.storage.base import Run, now
from agentctl.storage.fence import Fence
from agentctl.storage.sql.runs import COLUMNS, RunSql, SqlRunStore, fence_params
from agentctl.storage.sqlite.database import Database, SqliteTable
from agentctl.storage.sqlite.dialect import SQLITE, timestamp

SQL = RunSql(SQLITE)

# Per owner with pending runs, its oldest runnable one (NULL when none is) and how many of
# its runs are running: one probe of an index each (see database.py, migration 3).
_HEADS = (
    "SELECT (SELECT r.run_id FROM runs r WHERE r.status = 'pending' AND r.owner = q.owner"
    " AND (r.not_before IS NULL OR r.not_before <= ?)"
    " AND NOT EXISTS (SELECT 1 FROM runs o WHERE o.thread_id = r.thread_id"
    "  AND (o.status = 'running' OR (o.status = 'pending'"
    "  AND (o.created_at < r.created_at OR o.created_at = r.created_at AND o.run_id < r.run_id)"
    "  AND (o.not_before IS NULL OR o.not_before <= ?))))"
    " ORDER BY r.created_at, r.run_id LIMIT 1) AS run_id,"
    " (SELECT COUNT(*) FROM runs n WHERE n.owner = q.owner AND n.status = 'running') AS running"
    " FROM (SELECT DISTINCT owner FROM runs WHERE status = 'pending') q"
)
_NEXT = (
    f"WITH heads AS ({_HEADS}) SELECT {COLUMNS} FROM heads JOIN runs USING (run_id) "
    "ORDER BY heads.running, created_at, run_id LIMIT 1"
)
_CLAIM = (
    "UPDATE runs SET status = 'running', attempt = ?, worker = ?, "
    "lease_expires_at = ?, updated_at = ? WHERE run_id = ? AND status = 'pending'"
)


class _HeldFences:
    """Per run, the attempt seen holding it since its row last changed: a run's writes come
    many a second (its tokens), its row changes a few times a run. Temporary triggers on the
    table tell of every insert, update and delete, whatever statement or replayed journal
    made it, and each forgets the run it touched (the others' attempts still hold)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.seen: dict[str, tuple[str, int, str]] = {}
        conn.create_function("agentctl_run_changed", 1, self._changed)
        for change, row in (("INSERT", "NEW"), ("UPDATE", "OLD"), ("DELETE", "OLD")):
            conn.execute(
                f"CREATE TEMP TRIGGER IF NOT EXISTS agentctl_run_{change.lower()} "
                f"AFTER {change} ON main.runs BEGIN SELECT agentctl_run_changed({row}.run_id);"
                " END"
            )

    def _changed(self, run_id: str) -> None:
        self.seen.pop(run_id, None)


_held: weakref.WeakKeyDictionary[Database, _HeldFences] = weakref.WeakKeyDictionary()


def check_fence(db: Database, fence: Fence | None) -> None:
    """Refuse a write of a run's attempt (`Fence.refused`) unless it holds the run. Called
    inline right before the write, in the one process using the file: nothing can take the
    run over in between. The row is read only when a run changed since this attempt was
    last seen holding it."""
    if fence is None:
        return
    db.readable()
    held = _held.get(db)
    key = fence_params(fence)
    if held is not None and held.seen.get(fence.run_id) == key:
        return
    if not db.conn.execute(SQL.holds, key).fetchone():
        raise fence.refused()
    if held is not None:
        held.seen[fence.run_id] = key


class SqliteRuns(SqliteTable, SqlRunStore):
    sql = SQL

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        _held[db] = _HeldFences(db.conn)

    async def claim(self, at: datetime, *, worker: str, lease: float) -> Run | None:
        # One process uses the file, and nothing here awaits: the read and the update are
        # atomic. Most claims find nothing: they read without opening a transaction.
        at_ = timestamp(at)
        row = self.conn.execute(_NEXT, (at_, at_)).fetchone()
        if row is None:
            return None
        with self.db.transaction(sees_appends=False):
            run = SQL.record(row)
            run.status, run.attempt, run.updated_at = "running", run.attempt + 1, now()
            claimed = self.conn.execute(
                _CLAIM,
                (
                    run.attempt,
                    worker,
                    timestamp(run.updated_at + timedelta(seconds=lease)),
                    timestamp(run.updated_at),
                    run.run_id,
                ),
            ).rowcount
        return run if claimed == 1 else None

    async def requeue_orphans(self, worker: str, at: datetime) -> builtins.list[Run]:
        # Only this process uses the file: a run held by another worker id was left by a
        # previous process, whatever its lease says.
        return await self.requeue(
            "(worker IS NULL OR worker != ? OR lease_expires_at IS NULL OR lease_expires_at < ?)",
            worker,
            timestamp(at),
        )
