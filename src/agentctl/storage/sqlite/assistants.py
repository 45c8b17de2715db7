"""Assistants and their versions in the embedded database."""

from __future__ import annotations

from agentctl.storage.base import Assistant
from agentctl.storage.sql.assistants import AssistantSql, SqlAssistantStore
from agentctl.storage.sql.dialect import Row
from agentctl.storage.sqlite.database import Database, SqliteTable
from agentctl.storage.sqlite.dialect import SQLITE


class SqliteAssistants(SqliteTable, SqlAssistantStore):
    """Assistants and their versions. Every run reads its assistant: the current rows are
    kept in memory, and every change here drops them (this process is the file's only
    writer)."""

    sql = AssistantSql(SQLITE)

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._current: dict[str, Row] = {}  # assistant_id -> row of `get`

    async def put(self, assistant: Assistant) -> None:
        self._current.pop(assistant.assistant_id, None)
        with self.db.transaction():
            self.conn.execute(self.sql.put_version, self.sql.version_values(assistant))
            self.conn.execute(self.sql.put_current, self.sql.current_values(assistant))

    async def get(self, assistant_id: str) -> Assistant | None:
        row = self._current.get(assistant_id)
        if row is None:
            row = self.conn.execute(self.sql.get, (assistant_id,)).fetchone()
            if row is None:
                return None
            self._current[assistant_id] = row
        return self.sql.record(row)

    async def delete(self, assistant_id: str) -> bool:
        self._current.pop(assistant_id, None)
        with self.db.transaction():
            cursor = self.conn.execute(self.sql.delete, (assistant_id,))
            self.conn.execute(self.sql.delete_versions, (assistant_id,))
        return cursor.rowcount == 1

    async def set_latest(self, assistant_id: str, version: int) -> Assistant | None:
        self._current.pop(assistant_id, None)
        values = self.sql.set_latest_values(assistant_id, version)
        with self.db.transaction():
            changed = self.conn.execute(self.sql.set_latest, values).rowcount
        return None if changed != 1 else await self.get(assistant_id)
