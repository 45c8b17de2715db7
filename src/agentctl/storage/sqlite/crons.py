"""Crons in the embedded database."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentctl.storage.base import Cron, Page
from agentctl.storage.sql.crons import CronSql
from agentctl.storage.sqlite.database import Database
from agentctl.storage.sqlite.dialect import SQLITE

SQL = CronSql(SQLITE)


class SqliteCrons:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    async def create(self, cron: Cron) -> None:
        with self.db.transaction():
            self.conn.execute(SQL.insert, SQL.values(cron))

    async def update(self, cron: Cron) -> None:
        with self.db.transaction():
            self.conn.execute(SQL.upsert, SQL.values(cron))

    async def get(self, cron_id: str) -> Cron | None:
        row = self.conn.execute(SQL.get, (cron_id,)).fetchone()
        return None if row is None else SQL.record(row)

    async def delete(self, cron_id: str) -> bool:
        with self.db.transaction():
            cursor = self.conn.execute(SQL.delete, (cron_id,))
        return cursor.rowcount == 1

    async def search(
        self,
        *,
        assistant_id: str | None,
        thread_id: str | None,
        enabled: bool | None,
        metadata: dict[str, Any],
        page: Page,
    ) -> tuple[list[Cron], int]:
        rows, count = SQL.search(assistant_id, thread_id, enabled, metadata, page)
        found = self.conn.execute(rows.sql, rows.params).fetchall()
        (total,) = self.conn.execute(count.sql, count.params).fetchone()
        return [SQL.record(row) for row in found], total

    async def due(self, at: datetime) -> list[Cron]:
        return [SQL.record(row) for row in self.conn.execute(SQL.due, (SQLITE.time(at),))]

    async def reschedule(self, cron: Cron, *, expected: datetime | None) -> bool:
        with self.db.transaction():
            cursor = self.conn.execute(SQL.reschedule, SQL.reschedule_values(cron, expected))
        return cursor.rowcount == 1
