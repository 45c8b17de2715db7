"""The platform's registry of agents in the embedded database."""

from __future__ import annotations

from agentctl.storage.sql.agents import AgentSql, CleanupSql, SqlAgentRegistry
from agentctl.storage.sqlite.database import SqliteTable
from agentctl.storage.sqlite.dialect import SQLITE


class SqliteAgents(SqliteTable, SqlAgentRegistry):
    sql = AgentSql(SQLITE)
    cleanup_sql = CleanupSql(SQLITE)
