"""What differs between SQLite and PostgreSQL for the statements written once: how a
parameter is written, how JSON and timestamps travel, how JSON is filtered and text sorted."""

from __future__ import annotations

import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from agentctl.storage.base import Page

# (SQL condition, its parameters)
Clause = tuple[str, list[Any]]
Row = tuple[Any, ...]


def json_text(value: Any) -> str:
    """A stored JSON value as text: orjson, the same bytes on either database."""
    return orjson.dumps(value).decode()


_SURROGATE = re.compile("[\ud800-\udfff]")


def json_value(data: bytes | bytearray | memoryview | str) -> Any:
    """A stored JSON value, whatever wrote it, as values every answer can hold.

    orjson reads an integer past 64 bits as a float (`1e30`, which an older version stored
    and PostgreSQL gives back as 31 digits, is 1e30 again). What orjson refuses — a number
    past a float's range, an escaped lone surrogate — the standard library reads instead,
    made answerable: the number as None, the surrogate as U+FFFD."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        text = data if isinstance(data, str) else bytes(data).decode(errors="replace")
        return _answerable(json.loads(text))


def _answerable(value: Any) -> Any:
    if isinstance(value, dict):
        return {_answerable(key): _answerable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_answerable(item) for item in value]
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, int) and not -(2**63) <= value < 2**64:  # what orjson writes
        try:
            return float(value)
        except OverflowError:
            return None
    return value


@dataclass(frozen=True)
class Query:
    """A statement and its parameters."""

    sql: str
    params: Sequence[Any]


@dataclass(frozen=True)
class Dialect(ABC):
    """One database's way of writing what the shared statements need: its literals here,
    its conversions and conditions in the methods a subclass writes."""

    param: str  # a positional parameter: "?" or "%s"
    true: str  # the literal TRUE
    like: str  # case-insensitive LIKE
    same: str  # equality under which NULL equals NULL
    # A run's lease end, some seconds (its one parameter: `lease_param`) from the database's now.
    lease_end: str

    @abstractmethod
    def json(self, value: Any) -> Any:
        """`value` as a JSON parameter."""

    @abstractmethod
    def from_json(self, value: Any) -> Any:
        """A JSON column's value."""

    @abstractmethod
    def time(self, value: datetime | None) -> Any:
        """A datetime as a parameter."""

    @abstractmethod
    def from_time(self, value: Any) -> datetime | None:
        """A timestamp column's value, in UTC."""

    @abstractmethod
    def lease_param(self, seconds: float) -> Any:
        """The parameter of `lease_end` for a lease of `seconds`."""

    @abstractmethod
    def metadata_filter(self, column: str, metadata: dict[str, Any]) -> Clause:
        """SQL matching rows whose JSON `column` holds every key of `metadata` with that
        value (a None value: the key is missing or null)."""

    @abstractmethod
    def one_of(self, column: str, values: Sequence[Any]) -> Clause:
        """SQL matching rows whose `column` is one of `values`."""

    @abstractmethod
    def order(self, column: str, direction: str, text: bool) -> str:
        """An ORDER BY term for `column`, `direction` "asc" or "desc" (`text`: it holds
        text), sorting as SQLite does: text bytewise, NULL before any value."""

    @abstractmethod
    def text(self, column: str) -> str:
        """A text column as a tie-breaker sorts it (bytewise on both)."""

    def matching(self, column: str, metadata: dict[str, Any], equal: dict[str, Any]) -> Clause:
        """SQL matching rows whose JSON `column` holds `metadata` (`metadata_filter`) and
        whose columns equal the values in `equal` that are not None."""
        where, params = self.metadata_filter(column, metadata)
        for name, value in equal.items():
            if value is not None:
                where += f" AND {name} = {self.param}"
                params.append(value)
        return where, params

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
