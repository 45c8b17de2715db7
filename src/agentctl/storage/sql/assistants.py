"""The assistants tables' statements, rows and search, for either database: every version
in `assistant_versions`, the one in use (and when the assistant was made) in `assistants`."""

from __future__ import annotations

from typing import Any

from agentctl.storage.base import Assistant, AssistantFilter, Page, now
from agentctl.storage.sorts import ASSISTANT_SORT, sort_field
from agentctl.storage.sql.dialect import Dialect, Query, Row, page_queries
from agentctl.storage.sql.records import RowValues, TableSql, columns, names
from agentctl.storage.sql.table import RecordTable

# A version's `created_at` is when the assistant was last updated.
_SELECT = (
    "SELECT v.assistant_id, v.graph_id, v.name, v.description, v.config, v.context, "
    "v.metadata, v.version, a.created_at, v.created_at FROM assistants a "
    "JOIN assistant_versions v ON v.assistant_id = a.assistant_id"
)
_CURRENT = f"{_SELECT} AND v.version = a.version"
_RECORD = columns(
    "assistant_id, graph_id, name, description, config:json, context:json, metadata:json, "
    "version, created_at:time, updated_at:time"
)
_VERSION = columns(
    "assistant_id, version, graph_id, name, description, config:json, context:json, "
    "metadata:json, created_at=updated_at:time"
)
_CURRENT_ROW = columns("assistant_id, version, created_at:time, updated_at:time")
_TEXT = ("assistant_id", "graph_id", "name")


class AssistantSql(TableSql[Assistant]):
    def __init__(self, dialect: Dialect) -> None:
        super().__init__(d := dialect, Assistant, _RECORD)
        self.version_values = RowValues[Assistant](_VERSION, d).values
        self.current_values = RowValues[Assistant](_CURRENT_ROW, d).values
        p = d.param
        changed = ", ".join(f"{column.name} = excluded.{column.name}" for column in _VERSION[2:])
        self.put_version = (
            f"INSERT INTO assistant_versions ({names(_VERSION)}) "
            f"VALUES ({d.params(len(_VERSION))}) "
            f"ON CONFLICT (assistant_id, version) DO UPDATE SET {changed}"
        )
        self.put_current = (
            f"INSERT INTO assistants ({names(_CURRENT_ROW)}) "
            f"VALUES ({d.params(len(_CURRENT_ROW))}) ON CONFLICT (assistant_id) DO UPDATE SET "
            "version = excluded.version, updated_at = excluded.updated_at"
        )
        self.get = f"{_CURRENT} WHERE a.assistant_id = {p}"
        self.delete = f"DELETE FROM assistants WHERE assistant_id = {p}"
        self.delete_versions = f"DELETE FROM assistant_versions WHERE assistant_id = {p}"
        self.latest_version = (
            f"SELECT COALESCE(MAX(version), 0) FROM assistant_versions WHERE assistant_id = {p}"
        )
        # Only to a version that exists: one statement, so no other can delete it meanwhile.
        self.set_latest = (
            f"UPDATE assistants SET version = {p}, updated_at = {p} WHERE assistant_id = {p} "
            "AND EXISTS (SELECT 1 FROM assistant_versions "
            f"WHERE assistant_id = {p} AND version = {p})"
        )

    def set_latest_values(self, assistant_id: str, version: int) -> Row:
        return (version, self.dialect.time(now()), assistant_id, assistant_id, version)

    def search(self, where: AssistantFilter, page: Page) -> tuple[Query, Query]:
        """The page of matching assistants (their versions in use), and their count."""
        d = self.dialect
        condition, params = d.matching("v.metadata", where.metadata, {"v.graph_id": where.graph_id})
        if (name := where.name) is not None:
            condition += f" AND v.name {d.like} {d.param} ESCAPE '\\'"
            escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            params.append(f"%{escaped}%")
        sort = sort_field(page.sort_by, ASSISTANT_SORT)
        column = {"created_at": "a.created_at", "updated_at": "v.created_at"}.get(sort, f"v.{sort}")
        order = f"{d.order(column, page.sort_order, sort in _TEXT)}, {d.text('v.assistant_id')}"
        return page_queries(
            d, _CURRENT, (condition, params), order, page, f"({_CURRENT} WHERE {{where}}) found"
        )

    def versions(
        self, assistant_id: str, metadata: dict[str, Any], limit: int, offset: int
    ) -> Query:
        """The assistant's versions matching `metadata`, newest first."""
        p = self.dialect.param
        where, params = self.dialect.metadata_filter("v.metadata", metadata)
        return Query(
            f"{_SELECT} WHERE a.assistant_id = {p} AND {where} "
            f"ORDER BY v.version DESC LIMIT {p} OFFSET {p}",
            (assistant_id, *params, limit, offset),
        )


class SqlAssistantStore(RecordTable[Assistant]):
    """The `AssistantStore` reads both SQL backends share; each adds the writes."""

    sql: AssistantSql

    async def get(self, assistant_id: str) -> Assistant | None:
        return await self.one(self.sql.get, (assistant_id,))

    async def search(self, where: AssistantFilter, page: Page) -> tuple[list[Assistant], int]:
        return await self.found(self.sql.search(where, page))

    async def versions(
        self, assistant_id: str, *, metadata: dict[str, Any], limit: int, offset: int
    ) -> list[Assistant]:
        query = self.sql.versions(assistant_id, metadata, limit, offset)
        return [self.sql.record(row) for row in await self.rows(query.sql, query.params)]

    async def latest_version(self, assistant_id: str) -> int:
        row = await self.row(self.sql.latest_version, (assistant_id,))
        return int(row[0]) if row else 0
