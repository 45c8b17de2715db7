"""Users' connections to user-owned MCP servers in PostgreSQL."""

from __future__ import annotations

from agentctl.storage.postgres.database import PostgresTable
from agentctl.storage.postgres.dialect import POSTGRES
from agentctl.storage.sql.connections import ConnectionSql, SqlConnectionStore


class PostgresConnections(PostgresTable, SqlConnectionStore):
    sql = ConnectionSql(POSTGRES)
