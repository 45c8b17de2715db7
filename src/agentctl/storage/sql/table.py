"""How the code written once reaches a table: each backend runs the statements on its own
connection(s), each write in a transaction of its own, and hands rows back as tuples, the
shape the row mapping reads."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from agentctl.storage.sql.dialect import Query, Row

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class Table(ABC):
    """A table of the server's, reached through the backend's connection."""

    @abstractmethod
    async def rows(self, query: str, params: Sequence[Any] = ()) -> list[Row]:
        """Every row `query` returns."""

    @abstractmethod
    async def row(self, query: str, params: Sequence[Any] = ()) -> Row | None:
        """The first row `query` returns (None when none)."""

    @abstractmethod
    async def page(self, rows: Query, count: Query) -> tuple[list[Row], int]:
        """The rows of one page and the count of every match (`page_queries`)."""

    @abstractmethod
    async def write(
        self, query: str, params: Sequence[Any] = (), *, durable: bool = False, appends: bool = True
    ) -> int:
        """Run `query`, which changes rows; how many it changed. `durable`: committed
        before this returns, for a write a client is about to be told about. `appends`:
        False when it touches no table that appends are deferred to (events, checkpoints)."""

    @abstractmethod
    async def write_all(
        self, queries: Sequence[Query], *, durable: bool = False, appends: bool = True
    ) -> int:
        """Run `queries`, which change rows, in one transaction, in order; how many rows
        the first changed. When it changed none, the others are not run (a fenced write
        refused, a row gone: what goes with it is not written either)."""

    @abstractmethod
    async def write_rows(
        self, query: str, params: Sequence[Any] = (), *, durable: bool = False
    ) -> list[Row]:
        """Run `query`, which changes rows and returns some (RETURNING); the rows."""


class Statements(Protocol[R_co]):
    """A table's statements, with how one of its rows reads back (`RowMapping.record`)."""

    @property
    def record(self) -> Callable[[Row], R_co]: ...


class RecordTable(Table, Generic[R]):
    """A table whose rows read back as records of one type."""

    sql: Statements[R]

    async def one(self, query: str, params: Sequence[Any] = ()) -> R | None:
        """The record of the first row `query` returns (None when none)."""
        row = await self.row(query, params)
        return None if row is None else self.sql.record(row)

    async def found(self, queries: tuple[Query, Query]) -> tuple[list[R], int]:
        """The records of one page and the count of every match (`page_queries`)."""
        rows, total = await self.page(*queries)
        return [self.sql.record(row) for row in rows], total
