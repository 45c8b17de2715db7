"""Rows and records: a table's columns listed once, each with how its value travels, and
the mapping a dialect derives from them — the values a statement stores, in column order,
and the record a row reads back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any, Generic, Literal, TypeVar, cast, get_args

from agentctl.storage.sql.dialect import Dialect, Row

R = TypeVar("R")

# "value": stored as it is; "json": a JSON column (None is JSON null); "json_or_null": a
# nullable JSON column (None is NULL); "tuple": a JSON array, read back as a tuple; "time": a
# timestamp; "flag": a boolean (SQLite hands back 0 or 1).
Codec = Literal["value", "json", "json_or_null", "tuple", "time", "flag"]


@dataclass(frozen=True)
class Column:
    name: str  # the column
    codec: Codec = "value"
    field: str = ""  # the record's field, when not named as the column

    @property
    def source(self) -> str:
        return self.field or self.name


def columns(spec: str) -> tuple[Column, ...]:
    """Columns written `name` or `name:codec`, comma separated; `name=field` for a column
    stored from a field named otherwise."""
    found = []
    for item in spec.split(","):
        name, _, codec = item.strip().partition(":")
        name, _, field = name.partition("=")
        if codec and codec not in get_args(Codec):
            raise ValueError(f"column {name}: no codec {codec!r}")
        found.append(Column(name, cast(Codec, codec or "value"), field))
    return tuple(found)


def names(columns: Sequence[Column]) -> str:
    """The columns as a statement lists them."""
    return ", ".join(column.name for column in columns)


class RowValues(Generic[R]):
    """Records of one type to rows of `columns`, in one dialect. Only the columns with a
    codec are converted: rows are built for every statement, so they stay cheap."""

    def __init__(self, columns: Sequence[Column], dialect: Dialect) -> None:
        self.fields = tuple(column.source for column in columns)
        # Every table has several columns: the getter hands back a tuple.
        self.get = attrgetter(*self.fields)
        encoders: dict[Codec, Callable[[Any], Any]] = {
            "json": dialect.json,
            "json_or_null": lambda value: None if value is None else dialect.json(value),
            "tuple": lambda value: dialect.json(list(value)),
            "time": dialect.time,
        }
        self.encoders = _by_index(columns, encoders)

    def values(self, record: R) -> Row:
        """The record's values, in column order, as parameters."""
        values = list(self.get(record))
        for index, encode in self.encoders:
            values[index] = encode(values[index])
        return tuple(values)


class RowMapping(RowValues[R]):
    """Records of one type to rows of `columns` and back. The columns are the record's
    fields in their order, so a row's values build it as they come."""

    def __init__(self, make: type[R], columns: Sequence[Column], dialect: Dialect) -> None:
        super().__init__(columns, dialect)
        expected = tuple(field.name for field in fields(cast(Any, make)))
        if self.fields != expected:
            raise TypeError(f"{make.__name__}'s columns must be its fields in order: {expected}")
        self.make = make
        decoders: dict[Codec, Callable[[Any], Any]] = {
            "json": dialect.from_json,
            "json_or_null": dialect.from_json,
            "tuple": lambda value: tuple(dialect.from_json(value)),
            "time": dialect.from_time,
            "flag": bool,
        }
        self.decoders = _by_index(columns, decoders)

    def record(self, row: Row) -> R:
        """The record a row of the columns holds."""
        values = list(row)
        for index, decode in self.decoders:
            values[index] = decode(values[index])
        return self.make(*values)


class TableSql(Generic[R]):
    """A table's statements in one dialect. This sets `dialect`, `rows` (the mapping between
    the table's records and its rows) and, given the `table` and its `key`, the statements on
    one record: `get`, `delete` and `insert` (of every column); subclasses add the others."""

    def __init__(
        self,
        dialect: Dialect,
        make: type[R],
        columns: Sequence[Column],
        table: str | None = None,
        key: str | None = None,
    ) -> None:
        self.dialect = dialect
        self.rows = RowMapping(make, columns, dialect)
        self.record = self.rows.record
        if table is None or key is None:
            return  # records read from several tables: the subclass writes every statement
        listed = ", ".join(self.rows.fields)
        where = f"WHERE {key} = {dialect.param}"
        self.get = f"SELECT {listed} FROM {table} {where}"
        self.delete = f"DELETE FROM {table} {where}"
        self.insert = f"INSERT INTO {table} ({listed}) VALUES ({dialect.params(len(columns))})"


def _by_index(
    columns: Sequence[Column], codecs: dict[Codec, Callable[[Any], Any]]
) -> tuple[tuple[int, Callable[[Any], Any]], ...]:
    """(position, conversion) of each column whose codec converts."""
    return tuple(
        (index, codecs[column.codec])
        for index, column in enumerate(columns)
        if column.codec in codecs
    )
