"""Assistants and their versions in the embedded database."""

from __future__ import annotations

import sqlite3
from typing import Any

from agentctl.storage.base import Assistant, Page, now
from agentctl.storage.sqlite.database import (
    dumps,
    loads,
    metadata_filter,
    parse_time,
    timestamp,
    transaction,
)

ASSISTANT_SORT = {"assistant_id", "graph_id", "name", "created_at", "updated_at"}
_SELECT = (
    "SELECT v.assistant_id, v.graph_id, v.name, v.description, v.config, v.context, "
    "v.metadata, v.version, a.created_at, v.created_at FROM assistants a "
    "JOIN assistant_versions v ON v.assistant_id = a.assistant_id"
)


def _assistant(row: tuple[Any, ...]) -> Assistant:
    aid, graph, name, description, config, context, metadata, version, created, updated = row
    return Assistant(
        assistant_id=aid,
        graph_id=graph,
        name=name,
        description=description,
        config=loads(config),
        context=loads(context),
        metadata=loads(metadata),
        version=version,
        created_at=parse_time(created) or now(),
        updated_at=parse_time(updated) or now(),
    )


class SqliteAssistants:
    """Assistants and their versions. Every run reads its assistant: the current rows are
    kept in memory, and every change here drops them (this process is the file's only
    writer)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._current: dict[str, tuple[Any, ...]] = {}  # assistant_id -> row of `get`

    async def put(self, assistant: Assistant) -> None:
        self._current.pop(assistant.assistant_id, None)
        with transaction(self.conn):
            self.conn.execute(
                "INSERT OR REPLACE INTO assistant_versions (assistant_id, version, graph_id, "
                "name, description, config, context, metadata, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    assistant.assistant_id,
                    assistant.version,
                    assistant.graph_id,
                    assistant.name,
                    assistant.description,
                    dumps(assistant.config),
                    dumps(assistant.context),
                    dumps(assistant.metadata),
                    timestamp(assistant.updated_at),
                ),
            )
            self.conn.execute(
                "INSERT INTO assistants (assistant_id, version, created_at, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (assistant_id) DO UPDATE SET "
                "version = excluded.version, updated_at = excluded.updated_at",
                (
                    assistant.assistant_id,
                    assistant.version,
                    timestamp(assistant.created_at),
                    timestamp(assistant.updated_at),
                ),
            )

    async def get(self, assistant_id: str) -> Assistant | None:
        row = self._current.get(assistant_id)
        if row is None:
            row = self.conn.execute(
                f"{_SELECT} AND v.version = a.version WHERE a.assistant_id = ?", (assistant_id,)
            ).fetchone()
            if row is None:
                return None
            self._current[assistant_id] = row
        return _assistant(row)

    async def search(
        self, *, graph_id: str | None, name: str | None, metadata: dict[str, Any], page: Page
    ) -> tuple[list[Assistant], int]:
        where, params = metadata_filter("v.metadata", metadata)
        if graph_id is not None:
            where += " AND v.graph_id = ?"
            params.append(graph_id)
        if name is not None:
            where += " AND v.name LIKE ? ESCAPE '\\'"
            escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            params.append(f"%{escaped}%")
        sort = page.sort_by if page.sort_by in ASSISTANT_SORT else "created_at"
        column = {"created_at": "a.created_at", "updated_at": "v.created_at"}.get(sort, f"v.{sort}")
        order = "ASC" if page.sort_order == "asc" else "DESC"
        base = f"{_SELECT} AND v.version = a.version WHERE {where}"
        rows = self.conn.execute(
            f"{base} ORDER BY {column} {order}, v.assistant_id LIMIT ? OFFSET ?",
            (*params, page.limit, page.offset),
        ).fetchall()
        (total,) = self.conn.execute(f"SELECT COUNT(*) FROM ({base})", params).fetchone()
        return [_assistant(row) for row in rows], total

    async def delete(self, assistant_id: str) -> bool:
        self._current.pop(assistant_id, None)
        with transaction(self.conn):
            cursor = self.conn.execute(
                "DELETE FROM assistants WHERE assistant_id = ?", (assistant_id,)
            )
            self.conn.execute(
                "DELETE FROM assistant_versions WHERE assistant_id = ?", (assistant_id,)
            )
        return cursor.rowcount == 1

    async def versions(
        self, assistant_id: str, *, metadata: dict[str, Any], limit: int, offset: int
    ) -> list[Assistant]:
        where, params = metadata_filter("v.metadata", metadata)
        rows = self.conn.execute(
            f"{_SELECT} WHERE a.assistant_id = ? AND {where} "
            "ORDER BY v.version DESC LIMIT ? OFFSET ?",
            (assistant_id, *params, limit, offset),
        ).fetchall()
        return [_assistant(row) for row in rows]

    async def latest_version(self, assistant_id: str) -> int:
        (version,) = self.conn.execute(
            "SELECT COALESCE(MAX(version), 0) FROM assistant_versions WHERE assistant_id = ?",
            (assistant_id,),
        ).fetchone()
        return int(version)

    async def set_latest(self, assistant_id: str, version: int) -> Assistant | None:
        self._current.pop(assistant_id, None)
        with transaction(self.conn):
            exists = self.conn.execute(
                "SELECT 1 FROM assistant_versions WHERE assistant_id = ? AND version = ?",
                (assistant_id, version),
            ).fetchone()
            if exists is None:
                return None
            self.conn.execute(
                "UPDATE assistants SET version = ?, updated_at = ? WHERE assistant_id = ?",
                (version, timestamp(now()), assistant_id),
            )
        return await self.get(assistant_id)
