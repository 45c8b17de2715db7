"""The platform's registry of agents (`platform_agents`), for either database."""

from __future__ import annotations

import builtins

from agentctl.storage.base import AgentRecord
from agentctl.storage.sql.dialect import Dialect
from agentctl.storage.sql.records import TableSql, columns, names
from agentctl.storage.sql.table import RecordTable

_COLUMNS = columns("name, namespace, created_at:time")
COLUMNS = names(_COLUMNS)


class AgentSql(TableSql[AgentRecord]):
    def __init__(self, dialect: Dialect) -> None:
        super().__init__(dialect, AgentRecord, _COLUMNS, "platform_agents", "name")
        self.add = f"{self.insert} ON CONFLICT (name) DO NOTHING"
        self.list = f"SELECT {COLUMNS} FROM platform_agents ORDER BY name"


class SqlAgentRegistry(RecordTable[AgentRecord]):
    """The `AgentRegistry` both SQL backends share."""

    sql: AgentSql

    async def add(self, agent: AgentRecord) -> bool:
        values = self.sql.rows.values(agent)
        return await self.write(self.sql.add, values, durable=True, appends=False) == 1

    async def get(self, name: str) -> AgentRecord | None:
        return await self.one(self.sql.get, (name,))

    async def list(self) -> builtins.list[AgentRecord]:
        return [self.sql.record(row) for row in await self.rows(self.sql.list)]

    async def remove(self, name: str) -> bool:
        return await self.write(self.sql.delete, (name,), durable=True, appends=False) == 1
