"""How the code written once reaches a table: each backend runs the statements on its own
connection(s), each write in a transaction of its own, and hands rows back as tuples, the
shape the row mapping reads."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from agentctl.storage.sql.dialect import Query, Row


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
    async def write_rows(
        self, query: str, params: Sequence[Any] = (), *, durable: bool = False
    ) -> list[Row]:
        """Run `query`, which changes rows and returns some (RETURNING); the rows."""
