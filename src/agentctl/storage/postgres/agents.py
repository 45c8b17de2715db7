"""The platform's registry of agents in PostgreSQL."""

from __future__ import annotations

from agentctl.storage.postgres.database import PostgresTable
from agentctl.storage.postgres.dialect import POSTGRES
from agentctl.storage.sql.agents import AgentSql, CleanupSql, SqlAgentRegistry


class PostgresAgents(PostgresTable, SqlAgentRegistry):
    sql = AgentSql(POSTGRES)
    cleanup_sql = CleanupSql(POSTGRES)
