"""How the embedded database writes what the shared SQL needs: JSON as TEXT (SQLite's
JSON functions read TEXT; a BLOB would be taken as JSONB), timestamps as ISO 8601 text."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from agentctl.storage.sql.dialect import Clause, Dialect


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def loads(blob: bytes | str | None) -> Any:
    return None if blob is None else orjson.loads(blob)


def timestamp(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def parse_time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def metadata_filter(column: str, metadata: dict[str, Any]) -> Clause:
    """SQL matching rows whose JSON `column` holds every key of `metadata` with that value."""
    clauses: list[str] = []
    params: list[Any] = []
    for key, value in metadata.items():
        clauses.append(
            f"json_extract({column}, ?) IS ?"
            if value is None
            else f"json_extract({column}, ?) = json_extract(?, '$')"
        )
        params.append("$." + '"' + key.replace('"', '""') + '"')
        params.append(None if value is None else dumps(value))
    return " AND ".join(clauses) or "1", params


def one_of(column: str, values: Sequence[Any]) -> Clause:
    return f"{column} IN ({', '.join('?' for _ in values)})", list(values)


def order(column: str, direction: str, text: bool) -> str:
    """SQLite sorts text bytewise and NULL before any value already."""
    return f"{column} {'ASC' if direction == 'asc' else 'DESC'}"


def plain(column: str) -> str:
    return column


SQLITE = Dialect(
    param="?",
    true="1",
    like="LIKE",
    same="IS",
    json=dumps,
    from_json=loads,
    time=timestamp,
    from_time=parse_time,
    metadata_filter=metadata_filter,
    one_of=one_of,
    order=order,
    text=plain,
)
