"""Crons in PostgreSQL."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg.rows import DictRow

from agentctl.storage.base import Cron, Page, now
from agentctl.storage.postgres.database import Pool, jsonb, metadata_filter, order_by, utc

CRON_SORT = {"cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at",
             "updated_at"}  # fmt: skip
_TEXT = ("cron_id", "assistant_id", "thread_id")
_NAMES = (
    "cron_id", "assistant_id", "thread_id", "schedule", "timezone", "payload", "next_run_date",
    "end_time", "on_run_completed", "metadata", "enabled", "user_id", "created_at", "updated_at",
)  # fmt: skip
_COLUMNS = ", ".join(_NAMES)
_VALUES = ", ".join(["%s"] * len(_NAMES))
# Every column but the key, set from the row being inserted.
_SET = ", ".join(f"{name} = excluded.{name}" for name in _NAMES[1:])


def _cron(row: DictRow) -> Cron:
    return Cron(
        cron_id=row["cron_id"],
        assistant_id=row["assistant_id"],
        thread_id=row["thread_id"],
        schedule=row["schedule"],
        timezone=row["timezone"],
        payload=row["payload"],
        next_run_date=utc(row["next_run_date"]),
        end_time=utc(row["end_time"]),
        on_run_completed=row["on_run_completed"],
        metadata=row["metadata"],
        enabled=row["enabled"],
        user_id=row["user_id"],
        created_at=utc(row["created_at"]) or now(),
        updated_at=utc(row["updated_at"]) or now(),
    )


def _values(cron: Cron) -> tuple[Any, ...]:
    return (
        cron.cron_id,
        cron.assistant_id,
        cron.thread_id,
        cron.schedule,
        cron.timezone,
        jsonb(cron.payload),
        cron.next_run_date,
        cron.end_time,
        cron.on_run_completed,
        jsonb(cron.metadata),
        cron.enabled,
        cron.user_id,
        cron.created_at,
        cron.updated_at,
    )


class PostgresCrons:
    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def create(self, cron: Cron) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(f"INSERT INTO crons ({_COLUMNS}) VALUES ({_VALUES})", _values(cron))

    async def update(self, cron: Cron) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                f"INSERT INTO crons ({_COLUMNS}) VALUES ({_VALUES}) "
                f"ON CONFLICT (cron_id) DO UPDATE SET {_SET}",
                _values(cron),
            )

    async def get(self, cron_id: str) -> Cron | None:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_COLUMNS} FROM crons WHERE cron_id = %s", (cron_id,)
            )
            row = await cursor.fetchone()
        return None if row is None else _cron(row)

    async def delete(self, cron_id: str) -> bool:
        async with self.pool.connection() as conn:
            cursor = await conn.execute("DELETE FROM crons WHERE cron_id = %s", (cron_id,))
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
        where, params = metadata_filter("metadata", metadata)
        for column, value in (("assistant_id", assistant_id), ("thread_id", thread_id)):
            if value is not None:
                where += f" AND {column} = %s"
                params.append(value)
        if enabled is not None:
            where += " AND enabled = %s"
            params.append(enabled)
        sort = page.sort_by if page.sort_by in CRON_SORT else "created_at"
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_COLUMNS} FROM crons WHERE {where} "
                f'ORDER BY {order_by(sort, page.sort_order, _TEXT)}, cron_id COLLATE "C" '
                "LIMIT %s OFFSET %s",
                (*params, page.limit, page.offset),
            )
            rows = await cursor.fetchall()
            cursor = await conn.execute(f"SELECT COUNT(*) AS n FROM crons WHERE {where}", params)
            total = await cursor.fetchone()
        return [_cron(row) for row in rows], total["n"] if total else 0

    async def due(self, at: datetime) -> list[Cron]:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_COLUMNS} FROM crons WHERE enabled AND next_run_date IS NOT NULL "
                "AND next_run_date <= %s ORDER BY next_run_date",
                (at,),
            )
            rows = await cursor.fetchall()
        return [_cron(row) for row in rows]

    async def reschedule(self, cron: Cron, *, expected: datetime | None) -> bool:
        # The row is locked by the UPDATE, and its date re-checked once a concurrent
        # reschedule commits: of two processes firing one date, one stores the next.
        sets = ", ".join(f"{name} = %s" for name in _NAMES[1:])
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                f"UPDATE crons SET {sets} WHERE cron_id = %s "
                "AND next_run_date IS NOT DISTINCT FROM %s",
                (*_values(cron)[1:], cron.cron_id, expected),
            )
        return cursor.rowcount == 1
