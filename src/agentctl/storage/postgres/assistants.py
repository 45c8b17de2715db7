"""Assistants and their versions in PostgreSQL."""

from __future__ import annotations

from typing import Any

from psycopg.rows import DictRow

from agentctl.storage.base import Assistant, Page, now
from agentctl.storage.postgres.database import Pool, jsonb, metadata_filter, order_by, utc

ASSISTANT_SORT = {"assistant_id", "graph_id", "name", "created_at", "updated_at"}
_TEXT = ("assistant_id", "graph_id", "name")
_SELECT = (
    "SELECT v.assistant_id, v.graph_id, v.name, v.description, v.config, v.context, "
    "v.metadata, v.version, a.created_at, v.created_at AS updated_at FROM assistants a "
    "JOIN assistant_versions v ON v.assistant_id = a.assistant_id"
)


def _assistant(row: DictRow) -> Assistant:
    return Assistant(
        assistant_id=row["assistant_id"],
        graph_id=row["graph_id"],
        name=row["name"],
        description=row["description"],
        config=row["config"],
        context=row["context"],
        metadata=row["metadata"],
        version=row["version"],
        created_at=utc(row["created_at"]) or now(),
        updated_at=utc(row["updated_at"]) or now(),
    )


class PostgresAssistants:
    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def put(self, assistant: Assistant) -> None:
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO assistant_versions (assistant_id, version, graph_id, name, "
                "description, config, context, metadata, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (assistant_id, version) DO UPDATE SET graph_id = excluded.graph_id, "
                "name = excluded.name, description = excluded.description, "
                "config = excluded.config, context = excluded.context, "
                "metadata = excluded.metadata, created_at = excluded.created_at",
                (
                    assistant.assistant_id,
                    assistant.version,
                    assistant.graph_id,
                    assistant.name,
                    assistant.description,
                    jsonb(assistant.config),
                    jsonb(assistant.context),
                    jsonb(assistant.metadata),
                    assistant.updated_at,
                ),
            )
            await conn.execute(
                "INSERT INTO assistants (assistant_id, version, created_at, updated_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (assistant_id) DO UPDATE SET "
                "version = excluded.version, updated_at = excluded.updated_at",
                (
                    assistant.assistant_id,
                    assistant.version,
                    assistant.created_at,
                    assistant.updated_at,
                ),
            )

    async def get(self, assistant_id: str) -> Assistant | None:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                f"{_SELECT} AND v.version = a.version WHERE a.assistant_id = %s", (assistant_id,)
            )
            row = await cursor.fetchone()
        return None if row is None else _assistant(row)

    async def search(
        self, *, graph_id: str | None, name: str | None, metadata: dict[str, Any], page: Page
    ) -> tuple[list[Assistant], int]:
        where, params = metadata_filter("v.metadata", metadata)
        if graph_id is not None:
            where += " AND v.graph_id = %s"
            params.append(graph_id)
        if name is not None:
            # Case-insensitive, like SQLite's LIKE.
            where += " AND v.name ILIKE %s ESCAPE '\\'"
            escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            params.append(f"%{escaped}%")
        sort = page.sort_by if page.sort_by in ASSISTANT_SORT else "created_at"
        column = {"created_at": "a.created_at", "updated_at": "v.created_at"}.get(sort, f"v.{sort}")
        base = f"{_SELECT} AND v.version = a.version WHERE {where}"
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                f"{base} ORDER BY {order_by(column, page.sort_order, _TEXT)}, "
                'v.assistant_id COLLATE "C" LIMIT %s OFFSET %s',
                (*params, page.limit, page.offset),
            )
            rows = await cursor.fetchall()
            cursor = await conn.execute(f"SELECT COUNT(*) AS n FROM ({base}) found", params)
            total = await cursor.fetchone()
        return [_assistant(row) for row in rows], total["n"] if total else 0

    async def delete(self, assistant_id: str) -> bool:
        async with self.pool.connection() as conn, conn.transaction():
            cursor = await conn.execute(
                "DELETE FROM assistants WHERE assistant_id = %s", (assistant_id,)
            )
            await conn.execute(
                "DELETE FROM assistant_versions WHERE assistant_id = %s", (assistant_id,)
            )
        return cursor.rowcount == 1

    async def versions(
        self, assistant_id: str, *, metadata: dict[str, Any], limit: int, offset: int
    ) -> list[Assistant]:
        where, params = metadata_filter("v.metadata", metadata)
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                f"{_SELECT} WHERE a.assistant_id = %s AND {where} "
                "ORDER BY v.version DESC LIMIT %s OFFSET %s",
                (assistant_id, *params, limit, offset),
            )
            rows = await cursor.fetchall()
        return [_assistant(row) for row in rows]

    async def latest_version(self, assistant_id: str) -> int:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT COALESCE(MAX(version), 0) AS version FROM assistant_versions "
                "WHERE assistant_id = %s",
                (assistant_id,),
            )
            row = await cursor.fetchone()
        return int(row["version"]) if row else 0

    async def set_latest(self, assistant_id: str, version: int) -> Assistant | None:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "UPDATE assistants SET version = %s, updated_at = %s WHERE assistant_id = %s "
                "AND EXISTS (SELECT 1 FROM assistant_versions "
                "WHERE assistant_id = %s AND version = %s)",
                (version, now(), assistant_id, assistant_id, version),
            )
        return None if cursor.rowcount != 1 else await self.get(assistant_id)
