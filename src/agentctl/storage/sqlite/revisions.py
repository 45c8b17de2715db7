"""Deployed revisions in the embedded database: the archive, the sealed secrets, and which
revision is active."""

from __future__ import annotations

from agentctl.storage.sql.revisions import RevisionSql, SqlRevisionStore
from agentctl.storage.sqlite.database import SqliteTable
from agentctl.storage.sqlite.dialect import SQLITE


class SqliteRevisions(SqliteTable, SqlRevisionStore):
    sql = RevisionSql(SQLITE)

    async def activate(self, number: int) -> None:
        with self.db.transaction(durable=True):
            exists = self.conn.execute("SELECT 1 FROM revisions WHERE number = ?", (number,))
            if exists.fetchone() is None:
                raise LookupError(f"revision {number} does not exist: deploy it first")
            self.conn.execute(
                "INSERT INTO active_revision (id, number) VALUES (1, ?) "
                "ON CONFLICT (id) DO UPDATE SET number = excluded.number",
                (number,),
            )

    async def active(self) -> int | None:
        row = self.conn.execute("SELECT number FROM active_revision WHERE id = 1").fetchone()
        return None if row is None else int(row[0])
