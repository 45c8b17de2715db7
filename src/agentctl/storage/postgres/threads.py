"""Threads in PostgreSQL."""

from __future__ import annotations

from datetime import datetime

from agentctl.storage.base import Thread, ThreadUpdate
from agentctl.storage.fence import Fence
from agentctl.storage.postgres.database import Pool, PostgresTable
from agentctl.storage.postgres.dialect import POSTGRES, jsonb
from agentctl.storage.postgres.runs import SQL as RUNS
from agentctl.storage.sql.runs import fence_params, fenced
from agentctl.storage.sql.threads import COLUMNS, SqlThreadStore, ThreadData, ThreadSql

# One statement: concurrent merges of different keys all land.
_UPDATE = (
    "UPDATE threads SET metadata = metadata || %s, status = COALESCE(%s, status), "
    "interrupts = COALESCE(%s, interrupts), updated_at = %s WHERE thread_id = %s "
    f"RETURNING {COLUMNS}"
)
# The same, by a run's attempt: only while it holds the run (its row locked against a
# requeue until the change commits).
_FENCED_UPDATE = f"WITH holds AS (SELECT 1 FROM runs WHERE {fenced('%s')} FOR SHARE) " + (
    _UPDATE.replace("WHERE thread_id = %s", "WHERE thread_id = %s AND EXISTS (SELECT 1 FROM holds)")
)


class PostgresThreads(PostgresTable, SqlThreadStore):
    sql = ThreadSql(POSTGRES)

    def __init__(self, pool: Pool, data: ThreadData) -> None:
        super().__init__(pool)
        self.data = data

    async def apply(
        self, thread_id: str, change: ThreadUpdate, at: datetime, fence: Fence | None
    ) -> Thread | None:
        interrupts = None if change.interrupts is None else jsonb(change.interrupts)
        changes = jsonb(change.metadata), change.status, interrupts, at
        if fence is None:
            return await self.one(_UPDATE, (*changes, thread_id))
        thread = await self.one(_FENCED_UPDATE, (*fence_params(fence), *changes, thread_id))
        if thread is None and not await self.row(RUNS.holds, fence_params(fence)):
            raise fence.refused()
        return thread

    async def delete_rows(self, thread_id: str) -> bool:
        # The runs' rows first: a run's fenced update of its thread locks them in that order.
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(self.sql.delete_runs, (thread_id,))
            await conn.execute(self.sql.delete_tasks, (thread_id,))
            await conn.execute(self.sql.delete_traces, (thread_id,))
            cursor = await conn.execute(self.sql.delete, (thread_id,))
        return cursor.rowcount == 1
