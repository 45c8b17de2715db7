"""Crons in the embedded database."""

from __future__ import annotations

from datetime import datetime

from agentctl.storage.base import Cron
from agentctl.storage.sql.crons import CronSql, SqlCronStore
from agentctl.storage.sqlite.database import SqliteTable
from agentctl.storage.sqlite.dialect import SQLITE


class SqliteCrons(SqliteTable, SqlCronStore):
    sql = CronSql(SQLITE)

    async def create(self, cron: Cron) -> None:
        with self.db.transaction():
            self.conn.execute(self.sql.insert, self.sql.values(cron))

    async def update(self, cron: Cron) -> None:
        with self.db.transaction():
            self.conn.execute(self.sql.upsert, self.sql.values(cron))

    async def delete(self, cron_id: str) -> bool:
        with self.db.transaction():
            cursor = self.conn.execute(self.sql.delete, (cron_id,))
        return cursor.rowcount == 1

    async def reschedule(self, cron: Cron, *, expected: datetime | None) -> bool:
        values = self.sql.reschedule_values(cron, expected)
        with self.db.transaction():
            cursor = self.conn.execute(self.sql.reschedule, values)
        return cursor.rowcount == 1
