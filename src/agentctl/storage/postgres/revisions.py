"""Deployed revisions in PostgreSQL: the archive, the sealed secrets, and which revision
every replica serves."""

from __future__ import annotations

from agentctl.storage.postgres.database import PostgresTable
from agentctl.storage.postgres.dialect import POSTGRES
from agentctl.storage.sql.revisions import RevisionSql, SqlRevisionStore


class PostgresRevisions(PostgresTable, SqlRevisionStore):
    sql = RevisionSql(POSTGRES)

    async def activate(self, number: int) -> None:
        changed = await self.write(
            "INSERT INTO active_revision (id, number) "
            "SELECT TRUE, number FROM revisions WHERE number = %s "
            "ON CONFLICT (id) DO UPDATE SET number = excluded.number",
            (number,),
        )
        if changed != 1:
            raise LookupError(f"revision {number} does not exist: deploy it first")

    async def active(self) -> int | None:
        row = await self.row("SELECT number FROM active_revision")
        return None if row is None else int(row[0])
