"""Crons in the embedded database."""

from __future__ import annotations

from agentctl.storage.sql.crons import CronSql, SqlCronStore
from agentctl.storage.sqlite.database import SqliteTable
from agentctl.storage.sqlite.dialect import SQLITE


class SqliteCrons(SqliteTable, SqlCronStore):
    sql = CronSql(SQLITE)
