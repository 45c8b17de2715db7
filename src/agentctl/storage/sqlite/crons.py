"""Crons in the embedded database."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from agentctl.storage.base import Cron, Page, now
from agentctl.storage.sqlite.database import (
    dumps,
    loads,
    metadata_filter,
    parse_time,
    timestamp,
    transaction,
)

CRON_SORT = {"cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at",
             "updated_at"}  # fmt: skip
_COLUMNS = (
    "cron_id, assistant_id, thread_id, schedule, timezone, payload, next_run_date, end_time, "
    "on_run_completed, metadata, enabled, user_id, created_at, updated_at"
)


def _cron(row: tuple[Any, ...]) -> Cron:
    (cron_id, assistant_id, thread_id, schedule, tz, payload, next_run, end_time, on_completed,
     metadata, enabled, user_id, created, updated) = row  # fmt: skip
    return Cron(
        cron_id=cron_id,
        assistant_id=assistant_id,
        thread_id=thread_id,
        schedule=schedule,
        timezone=tz,
        payload=loads(payload),
        next_run_date=parse_time(next_run),
        end_time=parse_time(end_time),
        on_run_completed=on_completed,
        metadata=loads(metadata),
        enabled=bool(enabled),
        user_id=user_id,
        created_at=parse_time(created) or now(),
        updated_at=parse_time(updated) or now(),
    )


def _values(cron: Cron) -> tuple[Any, ...]:
    return (
        cron.cron_id,
        cron.assistant_id,
        cron.thread_id,
        cron.schedule,
        cron.timezone,
        dumps(cron.payload),
        timestamp(cron.next_run_date),
        timestamp(cron.end_time),
        cron.on_run_completed,
        dumps(cron.metadata),
        int(cron.enabled),
        cron.user_id,
        timestamp(cron.created_at),
        timestamp(cron.updated_at),
    )


class SqliteCrons:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def create(self, cron: Cron) -> None:
        with transaction(self.conn):
            self.conn.execute(
                f"INSERT INTO crons ({_COLUMNS}) VALUES ({', '.join('?' * 14)})", _values(cron)
            )

    async def update(self, cron: Cron) -> None:
        with transaction(self.conn):
            self.conn.execute(
                f"INSERT OR REPLACE INTO crons ({_COLUMNS}) VALUES ({', '.join('?' * 14)})",
                _values(cron),
            )

    async def get(self, cron_id: str) -> Cron | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM crons WHERE cron_id = ?", (cron_id,)
        ).fetchone()
        return None if row is None else _cron(row)

    async def delete(self, cron_id: str) -> bool:
        with transaction(self.conn):
            cursor = self.conn.execute("DELETE FROM crons WHERE cron_id = ?", (cron_id,))
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
                where += f" AND {column} = ?"
                params.append(value)
        if enabled is not None:
            where += " AND enabled = ?"
            params.append(int(enabled))
        sort = page.sort_by if page.sort_by in CRON_SORT else "created_at"
        order = "ASC" if page.sort_order == "asc" else "DESC"
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM crons WHERE {where} ORDER BY {sort} {order}, cron_id "
            "LIMIT ? OFFSET ?",
            (*params, page.limit, page.offset),
        ).fetchall()
        (total,) = self.conn.execute(f"SELECT COUNT(*) FROM crons WHERE {where}", params).fetchone()
        return [_cron(row) for row in rows], total

    async def due(self, at: datetime) -> list[Cron]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM crons WHERE enabled = 1 AND next_run_date IS NOT NULL "
            "AND next_run_date <= ? ORDER BY next_run_date",
            (timestamp(at),),
        ).fetchall()
        return [_cron(row) for row in rows]

    async def reschedule(self, cron: Cron, *, expected: datetime | None) -> bool:
        columns = _COLUMNS.split(", ")
        with transaction(self.conn):
            cursor = self.conn.execute(
                f"UPDATE crons SET ({', '.join(columns[1:])}) = ({', '.join('?' * 13)}) "
                "WHERE cron_id = ? AND next_run_date IS ?",
                (*_values(cron)[1:], cron.cron_id, timestamp(expected)),
            )
        return cursor.rowcount == 1
