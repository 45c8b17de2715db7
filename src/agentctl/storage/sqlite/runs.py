"""Runs in the embedded database."""

from __future__ import annotations

import builtins
import sqlite3
from datetime import datetime, timedelta
from typing import Any

from agentctl.storage.base import Run, RunStatus, now
from agentctl.storage.sqlite.database import dumps, loads, parse_time, timestamp, transaction

_COLUMNS = (
    "run_id, thread_id, assistant_id, status, metadata, multitask_strategy, kwargs, attempt, "
    "temporary, not_before, error, cancel_reason, created_at, updated_at"
)


def _run(row: tuple[Any, ...]) -> Run:
    (run_id, thread_id, assistant_id, status, metadata, strategy, kwargs, attempt, temporary,
     not_before, error, reason, created, updated) = row  # fmt: skip
    return Run(
        run_id=run_id,
        thread_id=thread_id,
        assistant_id=assistant_id,
        status=status,
        metadata=loads(metadata),
        multitask_strategy=strategy,
        kwargs=loads(kwargs),
        attempt=attempt,
        temporary=bool(temporary),
        not_before=parse_time(not_before),
        error=loads(error),
        cancel_reason=reason,
        created_at=parse_time(created) or now(),
        updated_at=parse_time(updated) or now(),
    )


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


class SqliteRuns:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def create(self, run: Run) -> None:
        with transaction(self.conn, durable=True):
            self.conn.execute(
                f"INSERT INTO runs ({_COLUMNS}, owner) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.run_id,
                    run.thread_id,
                    run.assistant_id,
                    run.status,
                    dumps(run.metadata),
                    run.multitask_strategy,
                    dumps(run.kwargs),
                    run.attempt,
                    int(run.temporary),
                    timestamp(run.not_before),
                    None if run.error is None else dumps(run.error),
                    run.cancel_reason,
                    timestamp(run.created_at),
                    timestamp(run.updated_at),
                    run.owner,
                ),
            )

    async def get(self, run_id: str) -> Run | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        return None if row is None else _run(row)

    async def list(
        self, thread_id: str, *, status: RunStatus | None, limit: int, offset: int
    ) -> builtins.list[Run]:
        where, params = "thread_id = ?", [thread_id]
        if status is not None:
            where += " AND status = ?"
            params.append(status)
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM runs WHERE {where} ORDER BY created_at DESC, run_id DESC "
            "LIMIT ? OFFSET ?",
            (*params, limit, offset),
        ).fetchall()
        return [_run(row) for row in rows]

    async def active(self, thread_id: str) -> builtins.list[Run]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM runs WHERE thread_id = ? "
            "AND status IN ('pending', 'running') ORDER BY created_at, run_id",
            (thread_id,),
        ).fetchall()
        return [_run(row) for row in rows]

    async def count_by_status(self) -> dict[str, int]:
        rows = self.conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall()
        return {status: count for status, count in rows}

    async def all_active(self) -> builtins.list[Run]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM runs WHERE status IN ('pending', 'running') "
            "ORDER BY created_at, run_id"
        ).fetchall()
        return [_run(row) for row in rows]

    async def claim(self, at: datetime, *, worker: str, lease: float) -> Run | None:
        # One process uses the file, and nothing here awaits: the read and the update are
        # atomic. Most claims find nothing: they read without opening a transaction.
        at_ = timestamp(at)
        row = self.conn.execute(
            f"WITH heads AS ({_HEADS}) SELECT {_COLUMNS} FROM heads JOIN runs USING (run_id) "
            "ORDER BY heads.running, created_at, run_id LIMIT 1",
            (at_, at_),
        ).fetchone()
        if row is None:
            return None
        with transaction(self.conn, sees_appends=False):
            run = _run(row)
            run.status, run.attempt, run.updated_at = "running", run.attempt + 1, now()
            claimed = self.conn.execute(
                "UPDATE runs SET status = 'running', attempt = ?, worker = ?, "
                "lease_expires_at = ?, updated_at = ? WHERE run_id = ? AND status = 'pending'",
                (
                    run.attempt,
                    worker,
                    timestamp(run.updated_at + timedelta(seconds=lease)),
                    timestamp(run.updated_at),
                    run.run_id,
                ),
            ).rowcount
        return run if claimed == 1 else None

    async def renew(self, worker: str, lease: float) -> set[str]:
        with transaction(self.conn):
            rows = self.conn.execute(
                "UPDATE runs SET lease_expires_at = ? WHERE status = 'running' AND worker = ? "
                "RETURNING run_id",
                (timestamp(now() + timedelta(seconds=lease)), worker),
            ).fetchall()
        return {run_id for (run_id,) in rows}

    async def requeue_orphans(self, worker: str, at: datetime) -> builtins.list[Run]:
        # Only this process uses the file: a run held by another worker id was left by a
        # previous process, whatever its lease says.
        return self._requeue(
            "(worker IS NULL OR worker != ? OR lease_expires_at IS NULL OR lease_expires_at < ?)",
            (worker, timestamp(at)),
        )

    async def release(self, worker: str, *, run_id: str | None = None) -> builtins.list[Run]:
        if run_id is not None:
            return self._requeue("worker = ? AND run_id = ?", (worker, run_id))
        return self._requeue("worker = ?", (worker,))

    def _requeue(self, where: str, params: tuple[Any, ...]) -> builtins.list[Run]:
        """Running runs matching `where` become pending, with no worker and no lease."""
        with transaction(self.conn):
            rows = self.conn.execute(
                "UPDATE runs SET status = 'pending', worker = NULL, lease_expires_at = NULL, "
                f"updated_at = ? WHERE status = 'running' AND {where} RETURNING {_COLUMNS}",
                (timestamp(now()), *params),
            ).fetchall()
        return sorted((_run(row) for row in rows), key=lambda run: (run.created_at, run.run_id))

    async def cancel_pending(self, run_id: str, *, delete: bool) -> bool:
        with transaction(self.conn):
            if delete:
                cursor = self.conn.execute(
                    "DELETE FROM runs WHERE run_id = ? AND status = 'pending'", (run_id,)
                )
            else:
                cursor = self.conn.execute(
                    "UPDATE runs SET status = 'interrupted', cancel_reason = 'cancelled', "
                    "updated_at = ? WHERE run_id = ? AND status = 'pending'",
                    (timestamp(now()), run_id),
                )
        return cursor.rowcount == 1

    async def finish(
        self, run_id: str, status: RunStatus, *, error: dict[str, Any] | None = None
    ) -> None:
        with transaction(self.conn, sees_appends=False):
            self.conn.execute(
                "UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE run_id = ?",
                (status, None if error is None else dumps(error), timestamp(now()), run_id),
            )

    async def set_status(self, run_id: str, status: RunStatus, reason: str | None = None) -> None:
        with transaction(self.conn, sees_appends=False):
            self.conn.execute(
                "UPDATE runs SET status = ?, cancel_reason = COALESCE(?, cancel_reason), "
                "updated_at = ? WHERE run_id = ?",
                (status, reason, timestamp(now()), run_id),
            )

    async def delete(self, run_id: str) -> bool:
        with transaction(self.conn):
            cursor = self.conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        return cursor.rowcount == 1

    async def next_wakeup(self) -> datetime | None:
        (at,) = self.conn.execute(
            "SELECT MIN(not_before) FROM runs WHERE status = 'pending' AND not_before IS NOT NULL"
        ).fetchone()
        return parse_time(at)
