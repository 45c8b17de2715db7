"""Deployed revisions in PostgreSQL: the archive, the sealed secrets, and which revision
every replica serves."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from psycopg.rows import DictRow

from agentctl.storage.base import RevisionRecord, now
from agentctl.storage.postgres.database import Pool, jsonb, utc

_COLUMNS = "number, revision_id, manifest, secret_names, created_at"


def _record(row: DictRow) -> RevisionRecord:
    return RevisionRecord(
        number=row["number"],
        revision_id=row["revision_id"],
        manifest=row["manifest"],
        secret_names=row["secret_names"],
        created_at=utc(row["created_at"]) or now(),
    )


class PostgresRevisions:
    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def add(
        self,
        revision_id: str,
        manifest: dict[str, Any],
        archive: bytes,
        sealed_secrets: bytes,
        secret_names: Sequence[str],
    ) -> RevisionRecord:
        # An identity column: numbers only grow and are never handed out twice.
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "INSERT INTO revisions (revision_id, manifest, archive, sealed_secrets, "
                f"secret_names, created_at) VALUES (%s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}",
                (
                    revision_id,
                    jsonb(manifest),
                    archive,
                    sealed_secrets,
                    jsonb(list(secret_names)),
                    now(),
                ),
            )
            row = await cursor.fetchone()
        if row is None:
            raise RuntimeError("PostgreSQL stored the revision but did not return its number")
        return _record(row)

    async def get(self, number: int) -> RevisionRecord | None:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_COLUMNS} FROM revisions WHERE number = %s", (number,)
            )
            row = await cursor.fetchone()
        return None if row is None else _record(row)

    async def list(self, *, limit: int, offset: int) -> tuple[builtins.list[RevisionRecord], int]:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_COLUMNS} FROM revisions ORDER BY number DESC LIMIT %s OFFSET %s",
                (limit, offset),
            )
            rows = await cursor.fetchall()
            cursor = await conn.execute("SELECT COUNT(*) AS n FROM revisions")
            total = await cursor.fetchone()
        return [_record(row) for row in rows], total["n"] if total else 0

    async def payload(self, number: int) -> tuple[bytes, bytes] | None:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT archive, sealed_secrets FROM revisions WHERE number = %s", (number,)
            )
            row = await cursor.fetchone()
        return None if row is None else (bytes(row["archive"]), bytes(row["sealed_secrets"]))

    async def activate(self, number: int) -> None:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                "INSERT INTO active_revision (id, number) "
                "SELECT TRUE, number FROM revisions WHERE number = %s "
                "ON CONFLICT (id) DO UPDATE SET number = excluded.number",
                (number,),
            )
        if cursor.rowcount != 1:
            raise LookupError(f"revision {number} does not exist: deploy it first")

    async def active(self) -> int | None:
        async with self.pool.connection() as conn:
            cursor = await conn.execute("SELECT number FROM active_revision")
            row = await cursor.fetchone()
        return None if row is None else int(row["number"])
