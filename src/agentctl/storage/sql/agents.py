"""The platform's registry of agents (`platform_agents`), for either database."""

from __future__ import annotations

import builtins

from agentctl.storage.base import AgentRecord
from agentctl.storage.sql.dialect import Dialect
from agentctl.storage.sql.records import RowMapping, columns, names
from agentctl.storage.sql.table import RecordTable

_COLUMNS = columns("name, namespace, created_at:time")
COLUMNS = names(_COLUMNS)


class AgentSql:
    def __init__(self, dialect: Dialect) -> None:
        self.dialect = d = dialect
        self.mapping = RowMapping(AgentRecord, _COLUMNS, d)
        self.record = self.mapping.record
        p = d.param
        self.add = (
            f"INSERT INTO platform_agents ({COLUMNS}) VALUES ({d.params(3)}) "
            "ON CONFLICT (name) DO NOTHING"
        )
        self.get = f"SELECT {COLUMNS} FROM platform_agents WHERE name = {p}"
        self.list = f"SELECT {COLUMNS} FROM platform_agents ORDER BY name"
        self.remove = f"DELETE FROM platform_agents WHERE name = {p}"


class SqlAgentRegistry(RecordTable[AgentRecord]):
    """The `AgentRegistry` both SQL backends share."""

    sql: AgentSql

    async def add(self, agent: AgentRecord) -> bool:
        values = self.sql.mapping.values(agent)
        return await self.write(self.sql.add, values, durable=True, appends=False) == 1

    async def get(self, name: str) -> AgentRecord | None:
        return await self.one(self.sql.get, (name,))

    async def list(self) -> builtins.list[AgentRecord]:
        return [self.sql.record(row) for row in await self.rows(self.sql.list)]

    async def remove(self, name: str) -> bool:
        return await self.write(self.sql.remove, (name,), durable=True, appends=False) == 1
