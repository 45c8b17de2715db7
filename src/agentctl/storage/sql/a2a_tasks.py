"""The A2A tasks table (`a2a_tasks`), for either database: every replica answers for every
task, with its artifacts."""

from __future__ import annotations

import builtins
from typing import Any

from agentctl.storage.base import A2ATask, A2ATaskFilter
from agentctl.storage.sql.dialect import Dialect, Query
from agentctl.storage.sql.records import TableSql, columns, names
from agentctl.storage.sql.table import RecordTable

_COLUMNS = columns("task_id, context_id, owner, state, position, task:json, updated_at:time")
COLUMNS = names(_COLUMNS)
_NAMES = [column.name for column in _COLUMNS]


class A2ATaskSql(TableSql[A2ATask]):
    def __init__(self, dialect: Dialect) -> None:
        super().__init__(dialect, A2ATask, _COLUMNS, "a2a_tasks", "task_id")
        self.values = self.rows.values
        replaced = ", ".join(f"{name} = excluded.{name}" for name in _NAMES[1:])
        self.upsert = f"{self.insert} ON CONFLICT (task_id) DO UPDATE SET {replaced}"

    def search(self, where: A2ATaskFilter, limit: int) -> tuple[Query, Query]:
        """The page of matching tasks, and how many match (`where.after` aside)."""
        d, p = self.dialect, self.dialect.param
        conditions: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("owner", where.owner),
            ("context_id", where.context_id),
            ("state", where.state),
        ):
            if value is not None:
                conditions.append(f"{column} = {p}")
                params.append(value)
        if where.since is not None:
            conditions.append(f"position >= {p}")
            params.append(where.since)
        condition = " AND ".join(conditions) or d.true
        count = Query(f"SELECT COUNT(*) FROM a2a_tasks WHERE {condition}", params)
        page_condition, page_params = condition, list(params)
        if where.after is not None:
            position, task_id = where.after
            page_condition += (
                f" AND (position < {p} OR (position = {p} AND {d.text('task_id')} < {p}))"
            )
            page_params += [position, position, task_id]
        order = f"position DESC, {d.text('task_id')} DESC"
        rows = Query(
            f"SELECT {COLUMNS} FROM a2a_tasks WHERE {page_condition} ORDER BY {order} LIMIT {p}",
            (*page_params, limit),
        )
        return rows, count


class SqlA2ATaskStore(RecordTable[A2ATask]):
    """The `A2ATaskStore` both SQL backends share."""

    sql: A2ATaskSql

    async def put(self, task: A2ATask) -> None:
        await self.write(self.sql.upsert, self.sql.values(task), appends=False)

    async def get(self, task_id: str) -> A2ATask | None:
        return await self.one(self.sql.get, (task_id,))

    async def list(self, where: A2ATaskFilter, limit: int) -> tuple[builtins.list[A2ATask], int]:
        return await self.found(self.sql.search(where, limit))

    async def delete(self, task_id: str) -> bool:
        return await self.write(self.sql.delete, (task_id,), appends=False) == 1
