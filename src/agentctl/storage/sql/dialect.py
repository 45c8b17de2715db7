"""What differs between SQLite and PostgreSQL for the statements written once: how a
parameter is written, how JSON and timestamps travel, how JSON is filtered and text sorted."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentctl.storage.base import Page

# (SQL condition, its parameters)
Clause = tuple[str, list[Any]]
Row = tuple[Any, ...]


@dataclass(frozen=True)
class Query:
    """A statement and its parameters."""

    sql: str
    params: Sequence[Any]


@dataclass(frozen=True)
class Dialect:
    """One database's way of writing what the shared statements need."""

    param: str  # a positional parameter: "?" or "%s"
    true: str  # the literal TRUE
    like: str  # case-insensitive LIKE
    same: str  # equality under which NULL equals NULL
    json: Callable[[Any], Any]  # a value as a JSON parameter
    from_json: Callable[[Any], Any]  # a JSON column's value
    time: Callable[[datetime | None], Any]  # a datetime as a parameter
    from_time: Callable[[Any], datetime | None]  # a timestamp column's value, in UTC
    # SQL matching rows whose JSON column holds every key of the metadata with that value.
    metadata_filter: Callable[[str, dict[str, Any]], Clause]
    # SQL matching rows whose column is one of the values.
    one_of: Callable[[str, Sequence[Any]], Clause]
    # An ORDER BY term: (column, "asc" | "desc", whether it holds text).
    order: Callable[[str, str, bool], str]
    # A text column as a tie-breaker sorts it (bytewise on both).
    text: Callable[[str], str]

    def params(self, count: int) -> str:
        """`count` parameters, comma separated."""
        return ", ".join([self.param] * count)


def page_queries(
    dialect: Dialect, select: str, where: Clause, order: str, page: Page, count: str
) -> tuple[Query, Query]:
    """The statement for one page of `select ... WHERE where ORDER BY order`, and the one
    counting every match (`count`: what `SELECT COUNT(*)` reads, with `{where}` in it)."""
    condition, params = where
    rows = Query(
        f"{select} WHERE {condition} ORDER BY {order} LIMIT {dialect.param} OFFSET {dialect.param}",
        (*params, page.limit, page.offset),
    )
    return rows, Query(f"SELECT COUNT(*) FROM {count.format(where=condition)}", params)
