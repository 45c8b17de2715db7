"""Assistants and their versions in the embedded database."""

from __future__ import annotations

from typing import Any

from agentctl.storage.base import Assistant, Page
from agentctl.storage.sql.assistants import AssistantSql
from agentctl.storage.sql.dialect import Row
from agentctl.storage.sqlite.database import Database
from agentctl.storage.sqlite.dialect import SQLITE

SQL = AssistantSql(SQLITE)


class SqliteAssistants:
    """Assistants and their versions. Every run reads its assistant: the current rows are
    kept in memory, and every change here drops them (this process is the file's only
    writer)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn
        self._current: dict[str, Row] = {}  # assistant_id -> row of `get`

    async def put(self, assistant: Assistant) -> None:
        self._current.pop(assistant.assistant_id, None)
        with self.db.transaction():
            self.conn.execute(SQL.put_version, SQL.version_values(assistant))
            self.conn.execute(SQL.put_current, SQL.current_values(assistant))

    async def get(self, assistant_id: str) -> Assistant | None:
        row = self._current.get(assistant_id)
        if row is None:
            row = self.conn.execute(SQL.get, (assistant_id,)).fetchone()
            if row is None:
                return None
            self._current[assistant_id] = row
        return SQL.record(row)

    async def search(
        self, *, graph_id: str | None, name: str | None, metadata: dict[str, Any], page: Page
    ) -> tuple[list[Assistant], int]:
        rows, count = SQL.search(graph_id, name, metadata, page)
        found = self.conn.execute(rows.sql, rows.params).fetchall()
        (total,) = self.conn.execute(count.sql, count.params).fetchone()
        return [SQL.record(row) for row in found], total

    async def delete(self, assistant_id: str) -> bool:
        self._current.pop(assistant_id, None)
        with self.db.transaction():
            cursor = self.conn.execute(SQL.delete, (assistant_id,))
            self.conn.execute(SQL.delete_versions, (assistant_id,))
        return cursor.rowcount == 1

    async def versions(
        self, assistant_id: str, *, metadata: dict[str, Any], limit: int, offset: int
    ) -> list[Assistant]:
        query = SQL.versions(assistant_id, metadata, limit, offset)
        return [SQL.record(row) for row in self.conn.execute(query.sql, query.params)]

    async def latest_version(self, assistant_id: str) -> int:
        (version,) = self.conn.execute(SQL.latest_version, (assistant_id,)).fetchone()
        return int(version)

    async def set_latest(self, assistant_id: str, version: int) -> Assistant | None:
        self._current.pop(assistant_id, None)
        with self.db.transaction():
            changed = self.conn.execute(
                SQL.set_latest, SQL.set_latest_values(assistant_id, version)
            ).rowcount
        return None if changed != 1 else await self.get(assistant_id)
