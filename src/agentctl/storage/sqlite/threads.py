"""Threads in the embedded database."""

from __future__ import annotations

from datetime import datetime

from agentctl.storage.base import Thread, ThreadUpdate
from agentctl.storage.fence import Fence
from agentctl.storage.sql.threads import SqlThreadStore, ThreadData, ThreadSql
from agentctl.storage.sqlite.database import Database, SqliteTable
from agentctl.storage.sqlite.dialect import SQLITE
from agentctl.storage.sqlite.runs import check_fence

_UPDATE = (
    "UPDATE threads SET metadata = ?, status = ?, interrupts = ?, updated_at = ? "
    "WHERE thread_id = ?"
)


class SqliteThreads(SqliteTable, SqlThreadStore):
    sql = ThreadSql(SQLITE)

    def __init__(self, db: Database, data: ThreadData) -> None:
        super().__init__(db)
        self.data = data

    async def apply(
        self, thread_id: str, change: ThreadUpdate, at: datetime, fence: Fence | None
    ) -> Thread | None:
        # Read, merge, write in one transaction: `get` runs inline, nothing writes in between.
        with self.db.transaction(sees_appends=False):
            check_fence(self.db, fence)
            thread = await self.get(thread_id)
            if thread is None:
                return None
            if change.metadata:
                thread.metadata = {**thread.metadata, **change.metadata}
            if change.status is not None:
                thread.status = change.status
            if change.interrupts is not None:
                thread.interrupts = change.interrupts
            thread.updated_at = at
            metadata_, interrupts_ = SQLITE.json(thread.metadata), SQLITE.json(thread.interrupts)
            changes = metadata_, thread.status, interrupts_, SQLITE.time(thread.updated_at)
            self.conn.execute(_UPDATE, (*changes, thread_id))
        return thread

    async def delete_rows(self, thread_id: str) -> bool:
        with self.db.transaction():
            cursor = self.conn.execute(self.sql.delete, (thread_id,))
            self.conn.execute(self.sql.delete_runs, (thread_id,))
            self.conn.execute(self.sql.delete_tasks, (thread_id,))
            self.conn.execute(self.sql.delete_traces, (thread_id,))
        return cursor.rowcount == 1
