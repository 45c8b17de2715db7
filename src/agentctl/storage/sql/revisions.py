"""The revisions table's statements and rows, for either database. Which revision is
active is each backend's own (a one-row table keyed differently)."""

from __future__ import annotations

import builtins

from agentctl.storage.base import NewRevision, RevisionRecord, now
from agentctl.storage.sql.dialect import Dialect, Query, Row
from agentctl.storage.sql.records import TableSql, columns, names
from agentctl.storage.sql.table import RecordTable

_COLUMNS = columns("number, revision_id, manifest:json, secret_names:json, created_at:time")
COLUMNS = names(_COLUMNS)


class RevisionSql(TableSql[RevisionRecord]):
    def __init__(self, dialect: Dialect) -> None:
        super().__init__(d := dialect, RevisionRecord, _COLUMNS, "revisions", "number")
        p = d.param
        # The number is the database's (never handed out twice, even after a delete).
        self.add = (
            "INSERT INTO revisions (revision_id, manifest, archive, sealed_secrets, "
            f"secret_names, created_at) VALUES ({d.params(6)}) RETURNING {COLUMNS}"
        )
        self.list = f"SELECT {COLUMNS} FROM revisions ORDER BY number DESC LIMIT {p} OFFSET {p}"
        self.count = "SELECT COUNT(*) FROM revisions"
        self.payload = f"SELECT archive, sealed_secrets FROM revisions WHERE number = {p}"

    def add_values(self, new: NewRevision) -> Row:
        """The row `add` stores."""
        d = self.dialect
        manifest, secret_names = d.json(new.manifest), d.json(list(new.secret_names))
        payload = new.archive, new.sealed_secrets
        return (new.revision_id, manifest, *payload, secret_names, d.time(now()))


class SqlRevisionStore(RecordTable[RevisionRecord]):
    """The `RevisionStore` methods both SQL backends share; each adds which revision is
    active."""

    sql: RevisionSql

    async def add(self, revision: NewRevision) -> RevisionRecord:
        found = await self.write_rows(self.sql.add, self.sql.add_values(revision), durable=True)
        if not found:
            raise RuntimeError("the database stored the revision but did not return its number")
        return self.sql.record(found[0])

    async def get(self, number: int) -> RevisionRecord | None:
        return await self.one(self.sql.get, (number,))

    async def list(self, *, limit: int, offset: int) -> tuple[builtins.list[RevisionRecord], int]:
        return await self.found((Query(self.sql.list, (limit, offset)), Query(self.sql.count, ())))

    async def payload(self, number: int) -> tuple[bytes, bytes] | None:
        row = await self.row(self.sql.payload, (number,))
        return None if row is None else (bytes(row[0]), bytes(row[1]))
