"""What runs spent, and their traces, in the embedded database."""

from __future__ import annotations

from agentctl.storage.sql.usage import SqlUsageStore, UsageSql
from agentctl.storage.sqlite.database import SqliteTable
from agentctl.storage.sqlite.dialect import SQLITE


class SqliteUsage(SqliteTable, SqlUsageStore):
    sql = UsageSql(SQLITE)
