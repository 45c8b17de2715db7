"""The revisions table's statements and rows, for either database. Which revision is
active is each backend's own (a one-row table keyed differently)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from agentctl.storage.base import RevisionRecord, now
from agentctl.storage.sql.dialect import Dialect, Query, Row
from agentctl.storage.sql.records import RowMapping, columns, names
from agentctl.storage.sql.table import Table

_COLUMNS = columns("number, revision_id, manifest:json, secret_names:json, created_at:time")
COLUMNS = names(_COLUMNS)


class RevisionSql:
    def __init__(self, dialect: Dialect) -> None:
        self.dialect = d = dialect
        self.record = RowMapping(RevisionRecord, _COLUMNS, d).record
        p = d.param
        # The number is the database's (never handed out twice, even after a delete).
        self.add = (
            "INSERT INTO revisions (revision_id, manifest, archive, sealed_secrets, "
            f"secret_names, created_at) VALUES ({d.params(6)}) RETURNING {COLUMNS}"
        )
        self.get = f"SELECT {COLUMNS} FROM revisions WHERE number = {p}"
        self.list = f"SELECT {COLUMNS} FROM revisions ORDER BY number DESC LIMIT {p} OFFSET {p}"
        self.count = "SELECT COUNT(*) FROM revisions"
        self.payload = f"SELECT archive, sealed_secrets FROM revisions WHERE number = {p}"

    def add_values(
        self, revision_id: str, manifest: dict[str, Any], payload: tuple[bytes, bytes],
        secret_names: Sequence[str],
    ) -> Row:  # fmt: skip
        """The row `add` stores; `payload`: the archive and the sealed secrets."""
        d = self.dialect
        return (revision_id, d.json(manifest), *payload, d.json(list(secret_names)), d.time(now()))


class SqlRevisionStore(Table):
    """The `RevisionStore` methods both SQL backends share; each adds which revision is
    active."""

    sql: RevisionSql

    async def add(
        self,
        revision_id: str,
        manifest: dict[str, Any],
        archive: bytes,
        sealed_secrets: bytes,
        secret_names: Sequence[str],
    ) -> RevisionRecord:
        values = self.sql.add_values(revision_id, manifest, (archive, sealed_secrets), secret_names)
        found = await self.write_rows(self.sql.add, values, durable=True)
        if not found:
            raise RuntimeError("the database stored the revision but did not return its number")
        return self.sql.record(found[0])

    async def get(self, number: int) -> RevisionRecord | None:
        row = await self.row(self.sql.get, (number,))
        return None if row is None else self.sql.record(row)

    async def list(self, *, limit: int, offset: int) -> tuple[builtins.list[RevisionRecord], int]:
        found, total = await self.page(
            Query(self.sql.list, (limit, offset)), Query(self.sql.count, ())
        )
        return [self.sql.record(row) for row in found], total

    async def payload(self, number: int) -> tuple[bytes, bytes] | None:
        row = await self.row(self.sql.payload, (number,))
        return None if row is None else (bytes(row[0]), bytes(row[1]))
