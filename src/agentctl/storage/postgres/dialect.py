"""How PostgreSQL writes what the shared SQL needs, giving the answers the embedded
database gives: JSONB serialized by orjson, UTC timestamps, text sorted bytewise with NULL
before any value, case-insensitive LIKE."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from psycopg.types.json import Jsonb

from agentctl.storage.sql.dialect import Clause, Dialect


def jsonb(value: Any) -> Jsonb:
    """A JSONB parameter, serialized as the SQLite backend does (orjson)."""
    return Jsonb(value, dumps=_dumps)


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def utc(value: datetime | None) -> datetime | None:
    """A timestamp as the UTC datetime the SQLite backend returns."""
    return None if value is None else value.astimezone(UTC)


def as_is(value: Any) -> Any:
    """psycopg already turns JSONB into Python values and datetimes into parameters."""
    return value


def metadata_filter(column: str, metadata: dict[str, Any]) -> Clause:
    """SQL matching rows whose JSONB `column` holds every key of `metadata` with that value
    (a None value: the key is missing or null), as on SQLite."""
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


def one_of(column: str, values: Sequence[Any]) -> Clause:
    return f"{column} = ANY(%s)", [list(values)]


def order(column: str, direction: str, text: bool) -> str:
    """An ORDER BY term sorting as SQLite does: text bytewise, NULL before any value."""
    nulls = "ASC NULLS FIRST" if direction == "asc" else "DESC NULLS LAST"
    return f"{bytewise(column) if text else column} {nulls}"


def bytewise(column: str) -> str:
    return f'{column} COLLATE "C"'


POSTGRES = Dialect(
    param="%s",
    true="TRUE",
    like="ILIKE",
    same="IS NOT DISTINCT FROM",
    json=jsonb,
    from_json=as_is,
    time=as_is,
    from_time=utc,
    metadata_filter=metadata_filter,
    one_of=one_of,
    order=order,
    text=bytewise,
)
