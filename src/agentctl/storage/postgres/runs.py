"""Runs in PostgreSQL, claimed by any number of replicas at once.

A claim is one statement, in a transaction of its own: it picks the fairest runnable run and
locks its row, skipping rows another claim has locked (`FOR UPDATE SKIP LOCKED`), so no claim
ever waits for another, and a replica that stalls mid-claim holds nothing the others need.
The row is re-checked once locked (still `pending`): no two replicas start one run. Each
thread has at most one runnable run (its oldest pending one, while none of its runs is
running), so no two runs of one thread start either. Leases are reckoned on the
database's clock at the moment of each write (`clock_timestamp()`), never from before a wait.
"""

from __future__ import annotations

import builtins
from datetime import datetime

from agentctl.storage.base import Run, now
from agentctl.storage.postgres.database import PostgresTable
from agentctl.storage.postgres.dialect import POSTGRES
from agentctl.storage.sql.runs import COLUMNS, RunSql, SqlRunStore

SQL = RunSql(POSTGRES)

# Per owner with a runnable pending run, its oldest ones (of different threads: each is the
# next of its thread) and how many of the owner's runs are running: a probe of an index each
# (see database.py, migration 2). A few per owner, so that replicas claiming at once for one
# owner each find one their row locks do not skip.
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
    ' ORDER BY r.created_at, r.run_id COLLATE "C" LIMIT 4) h'
)


_CLAIM = (
    f"WITH heads AS ({_HEADS}) "
    "UPDATE runs SET status = 'running', attempt = attempt + 1, worker = %s, "
    f"lease_expires_at = {POSTGRES.lease_end}, updated_at = %s WHERE run_id = ("
    " SELECT r.run_id FROM heads h JOIN runs r ON r.run_id = h.run_id"
    " WHERE r.status = 'pending'"
    ' ORDER BY h.running, h.created_at, h.run_id COLLATE "C" LIMIT 1'
    " FOR UPDATE OF r SKIP LOCKED"
    f") AND status = 'pending' RETURNING {COLUMNS}"
)
# The one order in which a statement or transaction locks several rows of runs. An UPDATE
# locks the rows it matches in the table's order: a lease renewal, locking a replica's runs
# that way, deadlocked with a batch of checkpoint saves that had share-locked two of them
# (each save holds its run against a takeover) in the order the saves came.
LOCK_ORDER = 'run_id COLLATE "C"'
# A worker's running runs, locked in that order.
_OF_WORKER = (
    "run_id IN (SELECT run_id FROM runs WHERE status = 'running' AND worker = %s"
    f" ORDER BY {LOCK_ORDER} FOR UPDATE)"
)
_RENEW = (
    f"UPDATE runs SET lease_expires_at = {POSTGRES.lease_end} WHERE {_OF_WORKER}"
    " AND status = 'running' AND worker = %s RETURNING run_id, attempt"
)
# Running runs whose lease ran out by the database's clock; a row locked by a write of its
# attempt (a fenced write holds it briefly) is left for the next look.
_ORPHANS = (
    "run_id IN (SELECT run_id FROM runs WHERE status = 'running' AND"
    " (lease_expires_at IS NULL OR lease_expires_at < clock_timestamp())"
    " FOR UPDATE SKIP LOCKED)"
)


class PostgresRuns(PostgresTable, SqlRunStore):
    sql = SQL

    async def claim(self, at: datetime, *, worker: str, lease: float) -> Run | None:
        found = await self.write_rows(_CLAIM, (at, at, worker, POSTGRES.lease_param(lease), now()))
        return SQL.record(found[0]) if found else None

    async def renew(self, worker: str, lease: float) -> dict[str, int]:
        until = POSTGRES.lease_param(lease)
        return dict(await self.write_rows(_RENEW, (until, worker, worker)))

    async def release(self, worker: str, *, run_id: str | None = None) -> builtins.list[Run]:
        if run_id is not None:
            return await super().release(worker, run_id=run_id)
        return await self.requeue(f"{_OF_WORKER} AND worker = %s", worker, worker)

    async def requeue_orphans(self, worker: str, at: datetime) -> builtins.list[Run]:
        # Other replicas' runs stay theirs while their leases run: `worker` and `at` (the
        # replica's clock) are not needed.
        return await self.requeue(_ORPHANS)
