"""What runs spent, and their traces, in PostgreSQL."""

from __future__ import annotations

from agentctl.storage.postgres.database import PostgresTable
from agentctl.storage.postgres.dialect import POSTGRES
from agentctl.storage.sql.usage import SqlUsageStore, UsageSql


class PostgresUsage(PostgresTable, SqlUsageStore):
    sql = UsageSql(POSTGRES)
