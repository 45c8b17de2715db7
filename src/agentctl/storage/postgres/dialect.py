"""How PostgreSQL writes what the shared SQL needs, giving the answers the embedded
database gives: JSONB serialized by orjson, UTC timestamps, text sorted bytewise with NULL
before any value, case-insensitive LIKE."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from psycopg.types.json import Jsonb

from agentctl.storage.sql.dialect import Clause, Dialect, json_text


def jsonb(value: Any) -> Jsonb:
    """A JSONB parameter, serialized as the SQLite backend does (orjson)."""
    return Jsonb(value, dumps=json_text)


class PostgresDialect(Dialect):
    def json(self, value: Any) -> Jsonb:
        return jsonb(value)

    # psycopg already turns JSONB into Python values and datetimes into parameters.
    def from_json(self, value: Any) -> Any:
        return value

    def time(self, value: datetime | None) -> datetime | None:
        return value

    def lease_param(self, seconds: float) -> float:
        return seconds

    def from_time(self, value: datetime | None) -> datetime | None:
        """The UTC datetime the SQLite backend returns."""
        return None if value is None else value.astimezone(UTC)

    def metadata_filter(self, column: str, metadata: dict[str, Any]) -> Clause:
        clauses: list[str] = []
        params: list[Any] = []
        for key, value in metadata.items():
            if value is None:
                clauses.append(f"COALESCE({column} -> %s, 'null'::jsonb) = 'null'::jsonb")
                params.append(key)
            else:
                # Containment can use a GIN index; equality keeps the exact meaning.
                clauses.append(f"({column} @> %s AND {column} -> %s = %s)")
                params.extend([jsonb({key: value}), key, jsonb(value)])
        return " AND ".join(clauses) or "TRUE", params

    def one_of(self, column: str, values: Sequence[Any]) -> Clause:
        return f"{column} = ANY(%s)", [list(values)]

    def order(self, column: str, direction: str, text: bool) -> str:
        nulls = "ASC NULLS FIRST" if direction == "asc" else "DESC NULLS LAST"
        return f"{self.text(column) if text else column} {nulls}"

    def text(self, column: str) -> str:
        return f'{column} COLLATE "C"'


POSTGRES = PostgresDialect(
    param="%s",
    true="TRUE",
    like="ILIKE",
    same="IS NOT DISTINCT FROM",
    # The time of the statement itself, not of its transaction: never before a wait.
    lease_end="clock_timestamp() + %s * INTERVAL '1 second'",
)
