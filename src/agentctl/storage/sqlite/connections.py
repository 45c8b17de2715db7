"""Users' connections to user-owned MCP servers in the embedded database."""

from __future__ import annotations

from agentctl.storage.sql.connections import ConnectionSql, SqlConnectionStore
from agentctl.storage.sqlite.database import SqliteTable
from agentctl.storage.sqlite.dialect import SQLITE


class SqliteConnections(SqliteTable, SqlConnectionStore):
    sql = ConnectionSql(SQLITE)
