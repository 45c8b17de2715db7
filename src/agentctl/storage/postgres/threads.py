"""Threads in PostgreSQL."""

from __future__ import annotations

from typing import Any

from agentctl.storage.base import EventLog, Thread, ThreadStatus, now
from agentctl.storage.postgres.checkpointer import PoolPostgresSaver
from agentctl.storage.postgres.database import Pool, PostgresTable
from agentctl.storage.postgres.dialect import POSTGRES, jsonb
from agentctl.storage.sql.threads import COLUMNS, SqlThreadStore, ThreadSql

# One statement: concurrent merges of different keys all land.
_UPDATE = (
    "UPDATE threads SET metadata = metadata || %s, status = COALESCE(%s, status), "
    "interrupts = COALESCE(%s, interrupts), updated_at = %s WHERE thread_id = %s "
    f"RETURNING {COLUMNS}"
)


class PostgresThreads(PostgresTable, SqlThreadStore):
    sql = ThreadSql(POSTGRES)

    def __init__(self, pool: Pool, checkpointer: PoolPostgresSaver, events: EventLog) -> None:
        super().__init__(pool)
        self.checkpointer = checkpointer
        self.events = events

    async def update(
        self,
        thread_id: str,
        *,
        metadata: dict[str, Any] | None = None,
        status: ThreadStatus | None = None,
        interrupts: dict[str, list[dict[str, Any]]] | None = None,
    ) -> Thread | None:
        changes = jsonb(metadata or {}), status, None if interrupts is None else jsonb(interrupts)
        row = await self.row(_UPDATE, (*changes, now(), thread_id))
        return None if row is None else self.sql.record(row)

    async def delete_rows(self, thread_id: str) -> bool:
        async with self.pool.connection() as conn, conn.transaction():
            cursor = await conn.execute(self.sql.delete, (thread_id,))
            await conn.execute(self.sql.delete_runs, (thread_id,))
        return cursor.rowcount == 1
