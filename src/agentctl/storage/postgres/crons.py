"""Crons in PostgreSQL."""

from __future__ import annotations

from agentctl.storage.postgres.database import PostgresTable
from agentctl.storage.postgres.dialect import POSTGRES
from agentctl.storage.sql.crons import CronSql, SqlCronStore


class PostgresCrons(PostgresTable, SqlCronStore):
    sql = CronSql(POSTGRES)
