"""Runs in PostgreSQL, claimed by any number of replicas at once.

A claim takes a transaction-scoped advisory lock before it looks for a runnable run, so
claims are serialized: each one sees every run the previous ones took (committed before
their lock was released), and no two replicas start one run, or two runs of one thread.
Leases are reckoned on the replicas' clocks, like the `at` every caller passes.
"""

from __future__ import annotations

import builtins
from datetime import datetime, timedelta
from typing import Any

from psycopg.rows import DictRow

from agentctl.storage.base import Run, RunStatus, now
from agentctl.storage.postgres.database import CLAIM_LOCK, Pool, jsonb, utc

_COLUMNS = (
    "run_id, thread_id, assistant_id, status, metadata, multitask_strategy, kwargs, attempt, "
    "temporary, not_before, error, cancel_reason, created_at, updated_at"
)


def _run(row: DictRow) -> Run:
    return Run(
        run_id=row["run_id"],
        thread_id=row["thread_id"],
        assistant_id=row["assistant_id"],
        status=row["status"],
        metadata=row["metadata"],
        multitask_strategy=row["multitask_strategy"],
        kwargs=row["kwargs"],
        attempt=row["attempt"],
        temporary=row["temporary"],
        not_before=utc(row["not_before"]),
        error=row["error"],
        cancel_reason=row["cancel_reason"],
        created_at=utc(row["created_at"]) or now(),
        updated_at=utc(row["updated_at"]) or now(),
    )


# Per owner with a runnable pending run, the oldest one and how many of the owner's runs are
# running: a probe of an index each (see database.py, migration 2).
_HEADS = (
    "SELECT h.run_id, h.created_at,"
    " (SELECT COUNT(*) FROM runs n WHERE n.owner = q.owner AND n.status = 'running') AS running"
    " FROM (SELECT DISTINCT owner FROM runs WHERE status = 'pending') q CROSS JOIN LATERAL"
    " (SELECT r.run_id, r.created_at FROM runs r WHERE r.status = 'pending' AND r.owner = q.owner"
    " AND (r.not_before IS NULL OR r.not_before <= %s)"
    " AND NOT EXISTS (SELECT 1 FROM runs o WHERE o.thread_id = r.thread_id"
    "  AND (o.status = 'running' OR (o.status = 'pending'"
    "  AND (o.created_at < r.created_at"
    '   OR o.created_at = r.created_at AND o.run_id COLLATE "C" < r.run_id)'
    "  AND (o.not_before IS NULL OR o.not_before <= %s))))"
    ' ORDER BY r.created_at, r.run_id COLLATE "C" LIMIT 1) h'
)


class PostgresRuns:
    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def _rows(self, query: str, *params: Any) -> builtins.list[DictRow]:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(query, params)
            return await cursor.fetchall() if cursor.description else []

    async def create(self, run: Run) -> None:
        await self._rows(
            f"INSERT INTO runs ({_COLUMNS}, owner) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            run.run_id,
            run.thread_id,
            run.assistant_id,
            run.status,
            jsonb(run.metadata),
            run.multitask_strategy,
            jsonb(run.kwargs),
            run.attempt,
            run.temporary,
            run.not_before,
            None if run.error is None else jsonb(run.error),
            run.cancel_reason,
            run.created_at,
            run.updated_at,
            run.owner,
        )

    async def get(self, run_id: str) -> Run | None:
        rows = await self._rows(f"SELECT {_COLUMNS} FROM runs WHERE run_id = %s", run_id)
        return _run(rows[0]) if rows else None

    async def list(
        self, thread_id: str, *, status: RunStatus | None, limit: int, offset: int
    ) -> builtins.list[Run]:
        rows = await self._rows(
            f"SELECT {_COLUMNS} FROM runs WHERE thread_id = %s "
            "AND (%s::text IS NULL OR status = %s) "
            'ORDER BY created_at DESC, run_id COLLATE "C" DESC LIMIT %s OFFSET %s',
            thread_id,
            status,
            status,
            limit,
            offset,
        )
        return [_run(row) for row in rows]

    async def active(self, thread_id: str) -> builtins.list[Run]:
        rows = await self._rows(
            f"SELECT {_COLUMNS} FROM runs WHERE thread_id = %s "
            "AND status IN ('pending', 'running') ORDER BY created_at, run_id COLLATE \"C\"",
            thread_id,
        )
        return [_run(row) for row in rows]

    async def count_by_status(self) -> dict[str, int]:
        rows = await self._rows("SELECT status, COUNT(*) AS n FROM runs GROUP BY status")
        return {row["status"]: row["n"] for row in rows}

    async def all_active(self) -> builtins.list[Run]:
        rows = await self._rows(
            f"SELECT {_COLUMNS} FROM runs WHERE status IN ('pending', 'running') "
            'ORDER BY created_at, run_id COLLATE "C"'
        )
        return [_run(row) for row in rows]

    async def claim(self, at: datetime, *, worker: str, lease: float) -> Run | None:
        claimed = now()
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (CLAIM_LOCK,))
            # A new statement, so a new snapshot: it sees the claims made before the lock.
            # A run cancelled meanwhile fails the re-check of its status: nothing is claimed.
            cursor = await conn.execute(
                f"WITH heads AS ({_HEADS}) "
                "UPDATE runs SET status = 'running', attempt = attempt + 1, worker = %s, "
                "lease_expires_at = %s, updated_at = %s WHERE run_id = ("
                ' SELECT run_id FROM heads ORDER BY running, created_at, run_id COLLATE "C" LIMIT 1'
                f") AND status = 'pending' RETURNING {_COLUMNS}",
                (at, at, worker, claimed + timedelta(seconds=lease), claimed),
            )
            row = await cursor.fetchone()
        return None if row is None else _run(row)

    async def renew(self, worker: str, lease: float) -> set[str]:
        rows = await self._rows(
            "UPDATE runs SET lease_expires_at = %s WHERE status = 'running' AND worker = %s "
            "RETURNING run_id",
            now() + timedelta(seconds=lease),
            worker,
        )
        return {row["run_id"] for row in rows}

    async def requeue_orphans(self, worker: str, at: datetime) -> builtins.list[Run]:
        # Other replicas' runs stay theirs while their leases run: `worker` is not needed.
        return await self._requeue("(lease_expires_at IS NULL OR lease_expires_at < %s)", at)

    async def release(self, worker: str, *, run_id: str | None = None) -> builtins.list[Run]:
        if run_id is not None:
            return await self._requeue("worker = %s AND run_id = %s", worker, run_id)
        return await self._requeue("worker = %s", worker)

    async def _requeue(self, where: str, *params: Any) -> builtins.list[Run]:
        """Running runs matching `where` become pending, with no worker and no lease."""
        rows = await self._rows(
            "UPDATE runs SET status = 'pending', worker = NULL, lease_expires_at = NULL, "
            f"updated_at = %s WHERE status = 'running' AND {where} RETURNING {_COLUMNS}",
            now(),
            *params,
        )
        return sorted((_run(row) for row in rows), key=lambda run: (run.created_at, run.run_id))

    async def cancel_pending(self, run_id: str, *, delete: bool) -> bool:
        # One statement, re-checked against a claim that updated the row first.
        if delete:
            rows = await self._rows(
                "DELETE FROM runs WHERE run_id = %s AND status = 'pending' RETURNING run_id",
                run_id,
            )
        else:
            rows = await self._rows(
                "UPDATE runs SET status = 'interrupted', cancel_reason = 'cancelled', "
                "updated_at = %s WHERE run_id = %s AND status = 'pending' RETURNING run_id",
                now(),
                run_id,
            )
        return len(rows) == 1

    async def finish(
        self, run_id: str, status: RunStatus, *, error: dict[str, Any] | None = None
    ) -> None:
        await self._rows(
            "UPDATE runs SET status = %s, error = %s, updated_at = %s WHERE run_id = %s",
            status,
            None if error is None else jsonb(error),
            now(),
            run_id,
        )

    async def set_status(self, run_id: str, status: RunStatus, reason: str | None = None) -> None:
        await self._rows(
            "UPDATE runs SET status = %s, cancel_reason = COALESCE(%s, cancel_reason), "
            "updated_at = %s WHERE run_id = %s",
            status,
            reason,
            now(),
            run_id,
        )

    async def delete(self, run_id: str) -> bool:
        rows = await self._rows("DELETE FROM runs WHERE run_id = %s RETURNING run_id", run_id)
        return len(rows) == 1

    async def next_wakeup(self) -> datetime | None:
        rows = await self._rows(
            "SELECT MIN(not_before) AS at FROM runs "
            "WHERE status = 'pending' AND not_before IS NOT NULL"
        )
        return utc(rows[0]["at"]) if rows else None
