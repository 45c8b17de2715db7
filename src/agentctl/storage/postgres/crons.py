"""Crons in PostgreSQL."""

from __future__ import annotations

from datetime import datetime

from agentctl.storage.base import Cron
from agentctl.storage.postgres.database import PostgresTable
from agentctl.storage.postgres.dialect import POSTGRES
from agentctl.storage.sql.crons import CronSql, SqlCronStore


class PostgresCrons(PostgresTable, SqlCronStore):
    sql = CronSql(POSTGRES)

    async def create(self, cron: Cron) -> None:
        await self.execute(self.sql.insert, self.sql.values(cron))

    async def update(self, cron: Cron) -> None:
        await self.execute(self.sql.upsert, self.sql.values(cron))

    async def delete(self, cron_id: str) -> bool:
        return await self.execute(self.sql.delete, (cron_id,)) == 1

    async def reschedule(self, cron: Cron, *, expected: datetime | None) -> bool:
        # The row is locked by the UPDATE, and its date re-checked once a concurrent
        # reschedule commits: of two processes firing one date, one stores the next.
        values = self.sql.reschedule_values(cron, expected)
        return await self.execute(self.sql.reschedule, values) == 1
