"""Assistants and their versions in PostgreSQL."""

from __future__ import annotations

from typing import Any

from agentctl.storage.base import Assistant, Page
from agentctl.storage.postgres.database import Table
from agentctl.storage.postgres.dialect import POSTGRES
from agentctl.storage.sql.assistants import AssistantSql

SQL = AssistantSql(POSTGRES)


class PostgresAssistants(Table):
    async def put(self, assistant: Assistant) -> None:
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(SQL.put_version, SQL.version_values(assistant))
            await conn.execute(SQL.put_current, SQL.current_values(assistant))

    async def get(self, assistant_id: str) -> Assistant | None:
        row = await self.row(SQL.get, (assistant_id,))
        return None if row is None else SQL.record(row)

    async def search(
        self, *, graph_id: str | None, name: str | None, metadata: dict[str, Any], page: Page
    ) -> tuple[list[Assistant], int]:
        found, total = await self.page(*SQL.search(graph_id, name, metadata, page))
        return [SQL.record(row) for row in found], total

    async def delete(self, assistant_id: str) -> bool:
        async with self.pool.connection() as conn, conn.transaction():
            cursor = await conn.execute(SQL.delete, (assistant_id,))
            await conn.execute(SQL.delete_versions, (assistant_id,))
        return cursor.rowcount == 1

    async def versions(
        self, assistant_id: str, *, metadata: dict[str, Any], limit: int, offset: int
    ) -> list[Assistant]:
        query = SQL.versions(assistant_id, metadata, limit, offset)
        return [SQL.record(row) for row in await self.rows(query.sql, query.params)]

    async def latest_version(self, assistant_id: str) -> int:
        row = await self.row(SQL.latest_version, (assistant_id,))
        return int(row[0]) if row else 0

    async def set_latest(self, assistant_id: str, version: int) -> Assistant | None:
        changed = await self.execute(SQL.set_latest, SQL.set_latest_values(assistant_id, version))
        return None if changed != 1 else await self.get(assistant_id)
