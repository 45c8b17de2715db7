"""Assistants and their versions in PostgreSQL."""

from __future__ import annotations

from agentctl.storage.base import Assistant
from agentctl.storage.postgres.database import PostgresTable
from agentctl.storage.postgres.dialect import POSTGRES
from agentctl.storage.sql.assistants import AssistantSql, SqlAssistantStore


class PostgresAssistants(PostgresTable, SqlAssistantStore):
    sql = AssistantSql(POSTGRES)

    async def put(self, assistant: Assistant) -> None:
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(self.sql.put_version, self.sql.version_values(assistant))
            await conn.execute(self.sql.put_current, self.sql.current_values(assistant))

    async def delete(self, assistant_id: str) -> bool:
        async with self.pool.connection() as conn, conn.transaction():
            cursor = await conn.execute(self.sql.delete, (assistant_id,))
            await conn.execute(self.sql.delete_versions, (assistant_id,))
        return cursor.rowcount == 1

    async def set_latest(self, assistant_id: str, version: int) -> Assistant | None:
        values = self.sql.set_latest_values(assistant_id, version)
        changed = await self.write(self.sql.set_latest, values)
        return None if changed != 1 else await self.get(assistant_id)
