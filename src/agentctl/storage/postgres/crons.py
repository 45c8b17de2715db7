"""Crons in PostgreSQL."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentctl.storage.base import Cron, Page
from agentctl.storage.postgres.database import Table
from agentctl.storage.postgres.dialect import POSTGRES
from agentctl.storage.sql.crons import CronSql

SQL = CronSql(POSTGRES)


class PostgresCrons(Table):
    async def create(self, cron: Cron) -> None:
        await self.execute(SQL.insert, SQL.values(cron))

    async def update(self, cron: Cron) -> None:
        await self.execute(SQL.upsert, SQL.values(cron))

    async def get(self, cron_id: str) -> Cron | None:
        row = await self.row(SQL.get, (cron_id,))
        return None if row is None else SQL.record(row)

    async def delete(self, cron_id: str) -> bool:
        return await self.execute(SQL.delete, (cron_id,)) == 1

    async def search(
        self,
        *,
        assistant_id: str | None,
        thread_id: str | None,
        enabled: bool | None,
        metadata: dict[str, Any],
        page: Page,
    ) -> tuple[list[Cron], int]:
        query = SQL.search(assistant_id, thread_id, enabled, metadata, page)
        found, total = await self.page(*query)
        return [SQL.record(row) for row in found], total

    async def due(self, at: datetime) -> list[Cron]:
        return [SQL.record(row) for row in await self.rows(SQL.due, (at,))]

    async def reschedule(self, cron: Cron, *, expected: datetime | None) -> bool:
        # The row is locked by the UPDATE, and its date re-checked once a concurrent
        # reschedule commits: of two processes firing one date, one stores the next.
        return await self.execute(SQL.reschedule, SQL.reschedule_values(cron, expected)) == 1
