"""Runs in PostgreSQL, claimed by any number of replicas at once.

A claim takes a transaction-scoped advisory lock before it looks for a runnable run, so
claims are serialized: each one sees every run the previous ones took (committed before
their lock was released), and no two replicas start one run, or two runs of one thread.
Leases are reckoned on the replicas' clocks, like the `at` every caller passes. Each schema
(storage namespace) has its own lock: the runs of one never wait for another's claims.
"""

from __future__ import annotations

import builtins
from datetime import datetime, timedelta

from agentctl.storage.base import Run, now
from agentctl.storage.namespace import lock_key
from agentctl.storage.postgres.database import CLAIM_LOCK, Pool, PostgresTable, rows
from agentctl.storage.postgres.dialect import POSTGRES
from agentctl.storage.sql.runs import COLUMNS, RunSql, SqlRunStore

SQL = RunSql(POSTGRES)

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


_CLAIM = (
    f"WITH heads AS ({_HEADS}) "
    "UPDATE runs SET status = 'running', attempt = attempt + 1, worker = %s, "
    "lease_expires_at = %s, updated_at = %s WHERE run_id = ("
    ' SELECT run_id FROM heads ORDER BY running, created_at, run_id COLLATE "C" LIMIT 1'
    f") AND status = 'pending' RETURNING {COLUMNS}"
)


class PostgresRuns(PostgresTable, SqlRunStore):
    sql = SQL

    def __init__(self, pool: Pool, schema: str | None = None) -> None:
        super().__init__(pool)
        self.claim_lock = lock_key(CLAIM_LOCK, schema)

    async def claim(self, at: datetime, *, worker: str, lease: float) -> Run | None:
        claimed = now()
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (self.claim_lock,))
            # A new statement, so a new snapshot: it sees the claims made before the lock.
            # A run cancelled meanwhile fails the re-check of its status: nothing is claimed.
            found = await rows(
                conn, _CLAIM, (at, at, worker, claimed + timedelta(seconds=lease), claimed)
            )
        return SQL.record(found[0]) if found else None

    async def requeue_orphans(self, worker: str, at: datetime) -> builtins.list[Run]:
        # Other replicas' runs stay theirs while their leases run: `worker` is not needed.
        return await self.requeue("(lease_expires_at IS NULL OR lease_expires_at < %s)", at)
