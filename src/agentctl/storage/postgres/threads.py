"""Threads in PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg.rows import DictRow

from agentctl.storage.base import EventLog, Page, Thread, ThreadStatus, now
from agentctl.storage.postgres.checkpointer import PoolPostgresSaver
from agentctl.storage.postgres.database import Pool, jsonb, metadata_filter, order_by, utc

THREAD_SORT = {"thread_id", "status", "created_at", "updated_at", "state_updated_at"}
_TEXT = ("thread_id", "status")
_COLUMNS = "thread_id, metadata, status, interrupts, created_at, updated_at"


def _thread(row: DictRow) -> Thread:
    return Thread(
        thread_id=row["thread_id"],
        metadata=row["metadata"],
        status=row["status"],
        interrupts=row["interrupts"],
        created_at=utc(row["created_at"]) or now(),
        updated_at=utc(row["updated_at"]) or now(),
    )


class PostgresThreads:
    def __init__(self, pool: Pool, checkpointer: PoolPostgresSaver, events: EventLog) -> None:
        self.pool = pool
        self.checkpointer = checkpointer
        self.events = events

    async def create(self, thread: Thread) -> bool:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                f"INSERT INTO threads ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (thread_id) DO NOTHING",
                (
                    thread.thread_id,
                    jsonb(thread.metadata),
                    thread.status,
                    jsonb(thread.interrupts),
                    thread.created_at,
                    thread.updated_at,
                ),
            )
        return cursor.rowcount == 1

    async def get(self, thread_id: str) -> Thread | None:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_COLUMNS} FROM threads WHERE thread_id = %s", (thread_id,)
            )
            row = await cursor.fetchone()
        return None if row is None else _thread(row)

    async def update(
        self,
        thread_id: str,
        *,
        metadata: dict[str, Any] | None = None,
        status: ThreadStatus | None = None,
        interrupts: dict[str, list[dict[str, Any]]] | None = None,
    ) -> Thread | None:
        # One statement: concurrent merges of different keys all land.
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "UPDATE threads SET metadata = metadata || %s, status = COALESCE(%s, status), "
                "interrupts = COALESCE(%s, interrupts), updated_at = %s WHERE thread_id = %s "
                f"RETURNING {_COLUMNS}",
                (
                    jsonb(metadata or {}),
                    status,
                    None if interrupts is None else jsonb(interrupts),
                    now(),
                    thread_id,
                ),
            )
            row = await cursor.fetchone()
        return None if row is None else _thread(row)

    async def delete(self, thread_id: str) -> bool:
        async with self.pool.connection() as conn, conn.transaction():
            cursor = await conn.execute("DELETE FROM threads WHERE thread_id = %s", (thread_id,))
            await conn.execute("DELETE FROM runs WHERE thread_id = %s", (thread_id,))
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
        where, params = metadata_filter("metadata", metadata)
        if status is not None:
            where += " AND status = %s"
            params.append(status)
        if ids is not None:
            where += " AND thread_id = ANY(%s)"
            params.append(list(ids))
        sort = page.sort_by if page.sort_by in THREAD_SORT else "created_at"
        sort = "updated_at" if sort == "state_updated_at" else sort
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_COLUMNS} FROM threads WHERE {where} "
                f'ORDER BY {order_by(sort, page.sort_order, _TEXT)}, thread_id COLLATE "C" '
                "LIMIT %s OFFSET %s",
                (*params, page.limit, page.offset),
            )
            rows = await cursor.fetchall()
            cursor = await conn.execute(f"SELECT COUNT(*) AS n FROM threads WHERE {where}", params)
            total = await cursor.fetchone()
        return [_thread(row) for row in rows], total["n"] if total else 0
