"""Threads in the embedded database."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from agentctl.storage.base import EventLog, Page, Thread, ThreadStatus, now
from agentctl.storage.sqlite.checkpointer import LoopSqliteSaver
from agentctl.storage.sqlite.database import (
    dumps,
    loads,
    metadata_filter,
    parse_time,
    timestamp,
    transaction,
)

THREAD_SORT = {"thread_id", "status", "created_at", "updated_at", "state_updated_at"}


def _thread(row: sqlite3.Row | tuple[Any, ...]) -> Thread:
    thread_id, metadata, status, interrupts, created, updated = row
    return Thread(
        thread_id=thread_id,
        metadata=loads(metadata),
        status=status,
        interrupts=loads(interrupts),
        created_at=parse_time(created) or now(),
        updated_at=parse_time(updated) or now(),
    )


_COLUMNS = "thread_id, metadata, status, interrupts, created_at, updated_at"


class SqliteThreads:
    def __init__(
        self, conn: sqlite3.Connection, checkpointer: LoopSqliteSaver, events: EventLog
    ) -> None:
        self.conn = conn
        self.checkpointer = checkpointer
        self.events = events

    async def create(self, thread: Thread) -> bool:
        with transaction(self.conn, durable=True):
            cursor = self.conn.execute(
                f"INSERT OR IGNORE INTO threads ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    thread.thread_id,
                    dumps(thread.metadata),
                    thread.status,
                    dumps(thread.interrupts),
                    timestamp(thread.created_at),
                    timestamp(thread.updated_at),
                ),
            )
        return cursor.rowcount == 1

    async def get(self, thread_id: str) -> Thread | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM threads WHERE thread_id = ?", (thread_id,)
        ).fetchone()
        return None if row is None else _thread(row)

    async def update(
        self,
        thread_id: str,
        *,
        metadata: dict[str, Any] | None = None,
        status: ThreadStatus | None = None,
        interrupts: dict[str, list[dict[str, Any]]] | None = None,
    ) -> Thread | None:
        with transaction(self.conn, sees_appends=False):
            thread = await self.get(thread_id)
            if thread is None:
                return None
            if metadata:
                thread.metadata = {**thread.metadata, **metadata}
            if status is not None:
                thread.status = status
            if interrupts is not None:
                thread.interrupts = interrupts
            thread.updated_at = now()
            self.conn.execute(
                "UPDATE threads SET metadata = ?, status = ?, interrupts = ?, updated_at = ? "
                "WHERE thread_id = ?",
                (
                    dumps(thread.metadata),
                    thread.status,
                    dumps(thread.interrupts),
                    timestamp(thread.updated_at),
                    thread_id,
                ),
            )
        return thread

    async def delete(self, thread_id: str) -> bool:
        with transaction(self.conn):
            cursor = self.conn.execute("DELETE FROM threads WHERE thread_id = ?", (thread_id,))
            self.conn.execute("DELETE FROM runs WHERE thread_id = ?", (thread_id,))
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
            where += " AND status = ?"
            params.append(status)
        if ids is not None:
            where += f" AND thread_id IN ({', '.join('?' for _ in ids)})"
            params.extend(ids)
        sort = page.sort_by if page.sort_by in THREAD_SORT else "created_at"
        sort = "updated_at" if sort == "state_updated_at" else sort
        order = "ASC" if page.sort_order == "asc" else "DESC"
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM threads WHERE {where} ORDER BY {sort} {order}, thread_id "
            "LIMIT ? OFFSET ?",
            (*params, page.limit, page.offset),
        ).fetchall()
        (total,) = self.conn.execute(
            f"SELECT COUNT(*) FROM threads WHERE {where}", params
        ).fetchone()
        return [_thread(row) for row in rows], total
