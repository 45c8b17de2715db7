"""How the embedded database writes what the shared SQL needs: JSON as TEXT (SQLite's
JSON functions read TEXT; a BLOB would be taken as JSONB), timestamps as ISO 8601 text."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from agentctl.storage.base import now
from agentctl.storage.sql.dialect import Clause, Dialect, json_text, json_value


def timestamp(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


class SqliteDialect(Dialect):
    def json(self, value: Any) -> str:
        return json_text(value)

    def from_json(self, value: bytes | str | None) -> Any:
        return None if value is None else json_value(value)

    def time(self, value: datetime | None) -> str | None:
        return timestamp(value)

    def from_time(self, value: str | None) -> datetime | None:
        return None if value is None else datetime.fromisoformat(value)

    # The one process using the file is the database: its clock, read as the statement runs
    # (statements run inline, nothing waits between the two).
    def lease_param(self, seconds: float) -> str | None:
        return timestamp(now() + timedelta(seconds=seconds))

    def metadata_filter(self, column: str, metadata: dict[str, Any]) -> Clause:
        clauses: list[str] = []
        params: list[Any] = []
        for key, value in metadata.items():
            clauses.append(
                f"json_extract({column}, ?) IS ?"
                if value is None
                else f"json_extract({column}, ?) = json_extract(?, '$')"
            )
            params.append("$." + '"' + key.replace('"', '""') + '"')
            params.append(None if value is None else json_text(value))
        return " AND ".join(clauses) or "1", params

    def one_of(self, column: str, values: Sequence[Any]) -> Clause:
        return f"{column} IN ({', '.join('?' for _ in values)})", list(values)

    # SQLite sorts text bytewise and NULL before any value already.
    def order(self, column: str, direction: str, text: bool) -> str:
        return f"{column} {'ASC' if direction == 'asc' else 'DESC'}"

    def text(self, column: str) -> str:
        return column


SQLITE = SqliteDialect(param="?", true="1", like="LIKE", same="IS", lease_end="?")
