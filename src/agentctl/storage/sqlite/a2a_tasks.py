"""The A2A tasks in the embedded database."""

from __future__ import annotations

from agentctl.storage.sql.a2a_tasks import A2ATaskSql, SqlA2ATaskStore
from agentctl.storage.sqlite.database import SqliteTable
from agentctl.storage.sqlite.dialect import SQLITE


class SqliteA2ATasks(SqliteTable, SqlA2ATaskStore):
    sql = A2ATaskSql(SQLITE)
