"""The A2A tasks in PostgreSQL."""

from __future__ import annotations

from agentctl.storage.postgres.database import PostgresTable
from agentctl.storage.postgres.dialect import POSTGRES
from agentctl.storage.sql.a2a_tasks import A2ATaskSql, SqlA2ATaskStore


class PostgresA2ATasks(PostgresTable, SqlA2ATaskStore):
    sql = A2ATaskSql(POSTGRES)
