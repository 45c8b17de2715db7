"""Threads in PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentctl.storage.base import EventLog, Page, Thread, ThreadStatus, now
from agentctl.storage.postgres.checkpointer import PoolPostgresSaver
from agentctl.storage.postgres.database import Pool, Table
from agentctl.storage.postgres.dialect import POSTGRES, jsonb
from agentctl.storage.sql.threads import COLUMNS, ThreadSql

SQL = ThreadSql(POSTGRES)
# One statement: concurrent merges of different keys all land.
_UPDATE = (
    "UPDATE threads SET metadata = metadata || %s, status = COALESCE(%s, status), "
    "interrupts = COALESCE(%s, interrupts), updated_at = %s WHERE thread_id = %s "
    f"RETURNING {COLUMNS}"
)


class PostgresThreads(Table):
    def __init__(self, pool: Pool, checkpointer: PoolPostgresSaver, events: EventLog) -> None:
        super().__init__(pool)
        self.checkpointer = checkpointer
        self.events = events

    async def create(self, thread: Thread) -> bool:
        return await self.execute(SQL.insert, SQL.values(thread)) == 1

    async def get(self, thread_id: str) -> Thread | None:
        row = await self.row(SQL.get, (thread_id,))
        return None if row is None else SQL.record(row)

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
        return None if row is None else SQL.record(row)

    async def delete(self, thread_id: str) -> bool:
        async with self.pool.connection() as conn, conn.transaction():
            cursor = await conn.execute(SQL.delete, (thread_id,))
            await conn.execute(SQL.delete_runs, (thread_id,))
        await self.events.delete(thread_id)
        await self.checkpointer.adelete_thread(thread_id)
        return cursor.rowcount == 1

    async def search(
        self,
        *,
        metadata: dict[str, Any],
        status: ThreadStatus | None,
        ids: Sequence[str] | None,
        page: Page,
    ) -> tuple[list[Thread], int]:
        found, total = await self.page(*SQL.search(metadata, status, ids, page))
        return [SQL.record(row) for row in found], total
