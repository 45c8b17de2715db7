"""Deployed revisions in PostgreSQL: the archive, the sealed secrets, and which revision
every replica serves."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from agentctl.storage.base import RevisionRecord
from agentctl.storage.postgres.database import Table
from agentctl.storage.postgres.dialect import POSTGRES
from agentctl.storage.sql.dialect import Query
from agentctl.storage.sql.revisions import RevisionSql

SQL = RevisionSql(POSTGRES)


class PostgresRevisions(Table):
    async def add(
        self,
        revision_id: str,
        manifest: dict[str, Any],
        archive: bytes,
        sealed_secrets: bytes,
        secret_names: Sequence[str],
    ) -> RevisionRecord:
        values = SQL.add_values(revision_id, manifest, (archive, sealed_secrets), secret_names)
        row = await self.row(SQL.add, values)
        if row is None:
            raise RuntimeError("PostgreSQL stored the revision but did not return its number")
        return SQL.record(row)

    async def get(self, number: int) -> RevisionRecord | None:
        row = await self.row(SQL.get, (number,))
        return None if row is None else SQL.record(row)

    async def list(self, *, limit: int, offset: int) -> tuple[builtins.list[RevisionRecord], int]:
        found, total = await self.page(Query(SQL.list, (limit, offset)), Query(SQL.count, ()))
        return [SQL.record(row) for row in found], total

    async def payload(self, number: int) -> tuple[bytes, bytes] | None:
        row = await self.row(SQL.payload, (number,))
        return None if row is None else (bytes(row[0]), bytes(row[1]))

    async def activate(self, number: int) -> None:
        changed = await self.execute(
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
