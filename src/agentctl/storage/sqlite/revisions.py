"""Deployed revisions in the embedded database: the archive, the sealed secrets, and which
revision is active."""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Sequence
from typing import Any

from agentctl.storage.base import RevisionRecord, now
from agentctl.storage.sqlite.database import dumps, loads, parse_time, timestamp, transaction

_COLUMNS = "number, revision_id, manifest, secret_names, created_at"


def _record(row: tuple[Any, ...]) -> RevisionRecord:
    number, revision_id, manifest, secret_names, created = row
    return RevisionRecord(
        number=number,
        revision_id=revision_id,
        manifest=loads(manifest),
        secret_names=loads(secret_names),
        created_at=parse_time(created) or now(),
    )


class SqliteRevisions:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def add(
        self,
        revision_id: str,
        manifest: dict[str, Any],
        archive: bytes,
        sealed_secrets: bytes,
        secret_names: Sequence[str],
    ) -> RevisionRecord:
        record = RevisionRecord(0, revision_id, manifest, list(secret_names))
        # AUTOINCREMENT: a number is never handed out twice, even after a delete.
        with transaction(self.conn, durable=True):
            (record.number,) = self.conn.execute(
                "INSERT INTO revisions (revision_id, manifest, archive, sealed_secrets, "
                "secret_names, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING number",
                (
                    revision_id,
                    dumps(manifest),
                    archive,
                    sealed_secrets,
                    dumps(record.secret_names),
                    timestamp(record.created_at),
                ),
            ).fetchone()
        return record

    async def get(self, number: int) -> RevisionRecord | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM revisions WHERE number = ?", (number,)
        ).fetchone()
        return None if row is None else _record(row)

    async def list(self, *, limit: int, offset: int) -> tuple[builtins.list[RevisionRecord], int]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM revisions ORDER BY number DESC LIMIT ? OFFSET ?",
            (limit, offset),
        ).fetchall()
        (total,) = self.conn.execute("SELECT COUNT(*) FROM revisions").fetchone()
        return [_record(row) for row in rows], total

    async def payload(self, number: int) -> tuple[bytes, bytes] | None:
        row = self.conn.execute(
            "SELECT archive, sealed_secrets FROM revisions WHERE number = ?", (number,)
        ).fetchone()
        return None if row is None else (bytes(row[0]), bytes(row[1]))

    async def activate(self, number: int) -> None:
        with transaction(self.conn, durable=True):
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
