"""The crons table's statements, rows and search, for either database."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentctl.storage.base import Cron, CronFilter, Page
from agentctl.storage.sorts import CRON_SORT, sort_field
from agentctl.storage.sql.dialect import Dialect, Query, Row, page_queries
from agentctl.storage.sql.records import TableSql, columns, names
from agentctl.storage.sql.table import RecordTable

_COLUMNS = columns(
    "cron_id, assistant_id, thread_id, schedule, payload:json, next_run_date:time, timezone, "
    "end_time:time, on_run_completed, metadata:json, enabled:flag, user_id, created_at:time, "
    "updated_at:time"
)
COLUMNS = names(_COLUMNS)
_NAMES = [column.name for column in _COLUMNS]
_TEXT = ("cron_id", "assistant_id", "thread_id")


class CronSql(TableSql[Cron]):
    def __init__(self, dialect: Dialect) -> None:
        super().__init__(d := dialect, Cron, _COLUMNS, "crons", "cron_id")
        self.values = self.rows.values
        p = d.param
        # Every column but the key, set from the row being inserted.
        replaced = ", ".join(f"{name} = excluded.{name}" for name in _NAMES[1:])
        self.upsert = f"{self.insert} ON CONFLICT (cron_id) DO UPDATE SET {replaced}"
        self.due = (
            f"SELECT {COLUMNS} FROM crons WHERE enabled = {d.true} AND next_run_date IS NOT NULL "
            f"AND next_run_date <= {p} ORDER BY next_run_date"
        )
        # Stored only if its date is still the one the caller saw: each date fires once.
        sets = ", ".join(f"{name} = {p}" for name in _NAMES[1:])
        self.reschedule = (
            f"UPDATE crons SET {sets} WHERE cron_id = {p} AND next_run_date {d.same} {p}"
        )

    def reschedule_values(self, cron: Cron, expected: Any) -> Row:
        return (*self.values(cron)[1:], cron.cron_id, self.dialect.time(expected))

    def search(self, where: CronFilter, page: Page) -> tuple[Query, Query]:
        """The page of matching crons, and their count."""
        d = self.dialect
        equal = {
            "assistant_id": where.assistant_id,
            "thread_id": where.thread_id,
            "enabled": where.enabled,
        }
        condition = d.matching("metadata", where.metadata, equal)
        sort = sort_field(page.sort_by, CRON_SORT)
        order = f"{d.order(sort, page.sort_order, sort in _TEXT)}, {d.text('cron_id')}"
        return page_queries(
            d, f"SELECT {COLUMNS} FROM crons", condition, order, page, "crons WHERE {where}"
        )


class SqlCronStore(RecordTable[Cron]):
    """The `CronStore` written once for both SQL backends."""

    sql: CronSql

    async def create(self, cron: Cron) -> None:
        await self.write(self.sql.insert, self.sql.values(cron))

    async def update(self, cron: Cron) -> None:
        await self.write(self.sql.upsert, self.sql.values(cron))

    async def delete(self, cron_id: str) -> bool:
        return await self.write(self.sql.delete, (cron_id,)) == 1

    async def reschedule(self, cron: Cron, *, expected: datetime | None) -> bool:
        # On PostgreSQL the row is locked by the UPDATE, and its date re-checked once a
        # concurrent reschedule commits: of two processes firing one date, one stores the next.
        values = self.sql.reschedule_values(cron, expected)
        return await self.write(self.sql.reschedule, values) == 1

    async def get(self, cron_id: str) -> Cron | None:
        return await self.one(self.sql.get, (cron_id,))

    async def search(self, where: CronFilter, page: Page) -> tuple[list[Cron], int]:
        return await self.found(self.sql.search(where, page))

    async def due(self, at: datetime) -> list[Cron]:
        return [
            self.sql.record(row)
            for row in await self.rows(self.sql.due, (self.sql.dialect.time(at),))
        ]
