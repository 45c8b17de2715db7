"""Threads in the embedded database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentctl.storage.base import EventLog, Page, Thread, ThreadStatus, now
from agentctl.storage.sql.threads import ThreadSql
from agentctl.storage.sqlite.checkpointer import LoopSqliteSaver
from agentctl.storage.sqlite.database import Database
from agentctl.storage.sqlite.dialect import SQLITE

SQL = ThreadSql(SQLITE)


class SqliteThreads:
    def __init__(self, db: Database, checkpointer: LoopSqliteSaver, events: EventLog) -> None:
        self.db = db
        self.conn = db.conn
        self.checkpointer = checkpointer
        self.events = events

    async def create(self, thread: Thread) -> bool:
        with self.db.transaction(durable=True):
            cursor = self.conn.execute(SQL.insert, SQL.values(thread))
        return cursor.rowcount == 1

    async def get(self, thread_id: str) -> Thread | None:
        row = self.conn.execute(SQL.get, (thread_id,)).fetchone()
        return None if row is None else SQL.record(row)

    async def update(
        self,
        thread_id: str,
        *,
        metadata: dict[str, Any] | None = None,
        status: ThreadStatus | None = None,
        interrupts: dict[str, list[dict[str, Any]]] | None = None,
    ) -> Thread | None:
        # Read, merge, write: nothing else writes the file meanwhile (no await in between).
        with self.db.transaction(sees_appends=False):
            thread = await self.get(thread_id)
            if thread is None:
                return None
            if metadata:
                thread.metadata = {**thread.metadata, **metadata}
            if status is not None:
                thread.status = status
            if interrupts is not None:
                thread.interrupts = interrupts
            thread.updated_at = now()
            self.conn.execute(
                "UPDATE threads SET metadata = ?, status = ?, interrupts = ?, updated_at = ? "
                "WHERE thread_id = ?",
                (*SQL.values(thread)[1:4], SQLITE.time(thread.updated_at), thread_id),
            )
        return thread

    async def delete(self, thread_id: str) -> bool:
        with self.db.transaction():
            cursor = self.conn.execute(SQL.delete, (thread_id,))
            self.conn.execute(SQL.delete_runs, (thread_id,))
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
        rows, count = SQL.search(metadata, status, ids, page)
        found = self.conn.execute(rows.sql, rows.params).fetchall()
        (total,) = self.conn.execute(count.sql, count.params).fetchone()
        return [SQL.record(row) for row in found], total
