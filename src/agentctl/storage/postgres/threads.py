"""Threads in PostgreSQL."""

from __future__ import annotations

from datetime import datetime

from agentctl.storage.base import Thread, ThreadUpdate
from agentctl.storage.postgres.database import Pool, PostgresTable
from agentctl.storage.postgres.dialect import POSTGRES, jsonb
from agentctl.storage.sql.threads import COLUMNS, SqlThreadStore, ThreadData, ThreadSql

# One statement: concurrent merges of different keys all land.
_UPDATE = (
    "UPDATE threads SET metadata = metadata || %s, status = COALESCE(%s, status), "
    "interrupts = COALESCE(%s, interrupts), updated_at = %s WHERE thread_id = %s "
    f"RETURNING {COLUMNS}"
)


class PostgresThreads(PostgresTable, SqlThreadStore):
    sql = ThreadSql(POSTGRES)

    def __init__(self, pool: Pool, data: ThreadData) -> None:
        super().__init__(pool)
        self.data = data

    async def apply(self, thread_id: str, change: ThreadUpdate, at: datetime) -> Thread | None:
        interrupts = None if change.interrupts is None else jsonb(change.interrupts)
        changes = jsonb(change.metadata), change.status, interrupts, at
        return await self.one(_UPDATE, (*changes, thread_id))

    async def delete_rows(self, thread_id: str) -> bool:
        async with self.pool.connection() as conn, conn.transaction():
            cursor = await conn.execute(self.sql.delete, (thread_id,))
            await conn.execute(self.sql.delete_runs, (thread_id,))
        return cursor.rowcount == 1
