"""Runs in the embedded database."""

from __future__ import annotations

import builtins
import sqlite3
from datetime import datetime
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


class SqliteRuns:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def create(self, run: Run) -> None:
        with transaction(self.conn, durable=True):
            self.conn.execute(
                f"INSERT INTO runs ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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

    async def claim(self, at: datetime) -> Run | None:
        with transaction(self.conn):
            row = self.conn.execute(
                f"SELECT {_COLUMNS} FROM runs r WHERE status = 'pending' "
                "AND (not_before IS NULL OR not_before <= ?) "
                "AND NOT EXISTS (SELECT 1 FROM runs o WHERE o.thread_id = r.thread_id "
                "AND o.status = 'running') ORDER BY created_at, run_id LIMIT 1",
                (timestamp(at),),
            ).fetchone()
            if row is None:
                return None
            run = _run(row)
            run.status, run.attempt, run.updated_at = "running", run.attempt + 1, now()
            self.conn.execute(
                "UPDATE runs SET status = 'running', attempt = ?, updated_at = ? WHERE run_id = ?",
                (run.attempt, timestamp(run.updated_at), run.run_id),
            )
        return run

    async def finish(
        self, run_id: str, status: RunStatus, *, error: dict[str, Any] | None = None
    ) -> None:
        with transaction(self.conn):
            self.conn.execute(
                "UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE run_id = ?",
                (status, None if error is None else dumps(error), timestamp(now()), run_id),
            )

    async def set_status(self, run_id: str, status: RunStatus, reason: str | None = None) -> None:
        with transaction(self.conn):
            self.conn.execute(
                "UPDATE runs SET status = ?, cancel_reason = COALESCE(?, cancel_reason), "
                "updated_at = ? WHERE run_id = ?",
                (status, reason, timestamp(now()), run_id),
            )

    async def delete(self, run_id: str) -> bool:
        with transaction(self.conn):
            cursor = self.conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        return cursor.rowcount == 1

    async def requeue_running(self) -> builtins.list[Run]:
        with transaction(self.conn):
            rows = self.conn.execute(
                f"SELECT {_COLUMNS} FROM runs WHERE status = 'running'"
            ).fetchall()
            self.conn.execute("UPDATE runs SET status = 'pending' WHERE status = 'running'")
        return [_run(row) for row in rows]

    async def next_wakeup(self) -> datetime | None:
        (at,) = self.conn.execute(
            "SELECT MIN(not_before) FROM runs WHERE status = 'pending' AND not_before IS NOT NULL"
        ).fetchone()
        return parse_time(at)
