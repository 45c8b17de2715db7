"""Deployed revisions in the embedded database: the archive, the sealed secrets, and which
revision is active."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from agentctl.storage.base import RevisionRecord
from agentctl.storage.sql.revisions import RevisionSql
from agentctl.storage.sqlite.database import Database
from agentctl.storage.sqlite.dialect import SQLITE

SQL = RevisionSql(SQLITE)


class SqliteRevisions:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    async def add(
        self,
        revision_id: str,
        manifest: dict[str, Any],
        archive: bytes,
        sealed_secrets: bytes,
        secret_names: Sequence[str],
    ) -> RevisionRecord:
        values = SQL.add_values(revision_id, manifest, (archive, sealed_secrets), secret_names)
        with self.db.transaction(durable=True):
            row = self.conn.execute(SQL.add, values).fetchone()
        return SQL.record(row)

    async def get(self, number: int) -> RevisionRecord | None:
        row = self.conn.execute(SQL.get, (number,)).fetchone()
        return None if row is None else SQL.record(row)

    async def list(self, *, limit: int, offset: int) -> tuple[builtins.list[RevisionRecord], int]:
        rows = self.conn.execute(SQL.list, (limit, offset)).fetchall()
        (total,) = self.conn.execute(SQL.count).fetchone()
        return [SQL.record(row) for row in rows], total

    async def payload(self, number: int) -> tuple[bytes, bytes] | None:
        row = self.conn.execute(SQL.payload, (number,)).fetchone()
        return None if row is None else (bytes(row[0]), bytes(row[1]))

    async def activate(self, number: int) -> None:
        with self.db.transaction(durable=True):
            exists = self.conn.execute(SQL.get, (number,))
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
