"""The crons table's statements, rows and search, for either database."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentctl.storage.base import Cron, Page, now
from agentctl.storage.sorts import CRON_SORT, sort_field
from agentctl.storage.sql.dialect import Dialect, Query, Row, page_queries
from agentctl.storage.sql.table import Table

_NAMES = (
    "cron_id", "assistant_id", "thread_id", "schedule", "timezone", "payload", "next_run_date",
    "end_time", "on_run_completed", "metadata", "enabled", "user_id", "created_at", "updated_at",
)  # fmt: skip
COLUMNS = ", ".join(_NAMES)
_TEXT = ("cron_id", "assistant_id", "thread_id")


class CronSql:
    def __init__(self, dialect: Dialect) -> None:
        self.dialect = d = dialect
        p = d.param
        self.insert = f"INSERT INTO crons ({COLUMNS}) VALUES ({d.params(len(_NAMES))})"
        # Every column but the key, set from the row being inserted.
        replaced = ", ".join(f"{name} = excluded.{name}" for name in _NAMES[1:])
        self.upsert = f"{self.insert} ON CONFLICT (cron_id) DO UPDATE SET {replaced}"
        self.get = f"SELECT {COLUMNS} FROM crons WHERE cron_id = {p}"
        self.delete = f"DELETE FROM crons WHERE cron_id = {p}"
        self.due = (
            f"SELECT {COLUMNS} FROM crons WHERE enabled = {d.true} AND next_run_date IS NOT NULL "
            f"AND next_run_date <= {p} ORDER BY next_run_date"
        )
        # Stored only if its date is still the one the caller saw: each date fires once.
        sets = ", ".join(f"{name} = {p}" for name in _NAMES[1:])
        self.reschedule = (
            f"UPDATE crons SET {sets} WHERE cron_id = {p} AND next_run_date {d.same} {p}"
        )

    def values(self, cron: Cron) -> Row:
        d = self.dialect
        return (
            cron.cron_id,
            cron.assistant_id,
            cron.thread_id,
            cron.schedule,
            cron.timezone,
            d.json(cron.payload),
            d.time(cron.next_run_date),
            d.time(cron.end_time),
            cron.on_run_completed,
            d.json(cron.metadata),
            cron.enabled,
            cron.user_id,
            d.time(cron.created_at),
            d.time(cron.updated_at),
        )

    def reschedule_values(self, cron: Cron, expected: Any) -> Row:
        return (*self.values(cron)[1:], cron.cron_id, self.dialect.time(expected))

    def record(self, row: Row) -> Cron:
        (cron_id, assistant_id, thread_id, schedule, tz, payload, next_run, end_time, on_completed,
         metadata, enabled, user_id, created, updated) = row  # fmt: skip
        d = self.dialect
        return Cron(
            cron_id=cron_id,
            assistant_id=assistant_id,
            thread_id=thread_id,
            schedule=schedule,
            timezone=tz,
            payload=d.from_json(payload),
            next_run_date=d.from_time(next_run),
            end_time=d.from_time(end_time),
            on_run_completed=on_completed,
            metadata=d.from_json(metadata),
            enabled=bool(enabled),
            user_id=user_id,
            created_at=d.from_time(created) or now(),
            updated_at=d.from_time(updated) or now(),
        )

    def search(
        self, assistant_id: str | None, thread_id: str | None, enabled: bool | None,
        metadata: dict[str, Any], page: Page,
    ) -> tuple[Query, Query]:  # fmt: skip
        """The page of matching crons, and their count."""
        d = self.dialect
        where, params = d.metadata_filter("metadata", metadata)
        for column, value in (("assistant_id", assistant_id), ("thread_id", thread_id)):
            if value is not None:
                where += f" AND {column} = {d.param}"
                params.append(value)
        if enabled is not None:
            where += f" AND enabled = {d.param}"
            params.append(enabled)
        sort = sort_field(page.sort_by, CRON_SORT)
        order = f"{d.order(sort, page.sort_order, sort in _TEXT)}, {d.text('cron_id')}"
        return page_queries(
            d, f"SELECT {COLUMNS} FROM crons", (where, params), order, page, "crons WHERE {where}"
        )


class SqlCronStore(Table):
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
        row = await self.row(self.sql.get, (cron_id,))
        return None if row is None else self.sql.record(row)

    async def search(
        self,
        *,
        assistant_id: str | None,
        thread_id: str | None,
        enabled: bool | None,
        metadata: dict[str, Any],
        page: Page,
    ) -> tuple[list[Cron], int]:
        query = self.sql.search(assistant_id, thread_id, enabled, metadata, page)
        found, total = await self.page(*query)
        return [self.sql.record(row) for row in found], total

    async def due(self, at: datetime) -> list[Cron]:
        return [
            self.sql.record(row)
            for row in await self.rows(self.sql.due, (self.sql.dialect.time(at),))
        ]
