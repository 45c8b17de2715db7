"""The platform's registry of agents (`platform_agents`) and the sandbox cleanups their
deletions left to do (`platform_sandbox_cleanups`), for either database."""

from __future__ import annotations

import builtins

from agentctl.storage.base import AgentRecord, SandboxCleanup
from agentctl.storage.sql.dialect import Dialect
from agentctl.storage.sql.records import TableSql, columns, names
from agentctl.storage.sql.table import RecordTable

_COLUMNS = columns("name, namespace, created_at:time, incarnation")
COLUMNS = names(_COLUMNS)
_CLEANUP_COLUMNS = columns("owner, agent, requested_at:time, attempts, last_error")
_CLEANUPS = "platform_sandbox_cleanups"


class AgentSql(TableSql[AgentRecord]):
    def __init__(self, dialect: Dialect) -> None:
        super().__init__(dialect, AgentRecord, _COLUMNS, "platform_agents", "name")
        self.add = f"{self.insert} ON CONFLICT (name) DO NOTHING"
        self.list = f"SELECT {COLUMNS} FROM platform_agents ORDER BY name"


class CleanupSql(TableSql[SandboxCleanup]):
    def __init__(self, dialect: Dialect) -> None:
        super().__init__(dialect, SandboxCleanup, _CLEANUP_COLUMNS, _CLEANUPS, "owner")
        param = dialect.param
        self.add = f"{self.insert} ON CONFLICT (owner) DO NOTHING"
        self.list = f"SELECT {names(_CLEANUP_COLUMNS)} FROM {_CLEANUPS} ORDER BY requested_at"
        self.failed = (
            f"UPDATE {_CLEANUPS} SET attempts = attempts + 1, last_error = {param} "
            f"WHERE owner = {param}"
        )


class SqlAgentRegistry(RecordTable[AgentRecord]):
    """The `AgentRegistry` both SQL backends share."""

    sql: AgentSql
    cleanup_sql: CleanupSql

    async def add(self, agent: AgentRecord) -> bool:
        values = self.sql.rows.values(agent)
        return await self.write(self.sql.add, values, durable=True, appends=False) == 1

    async def get(self, name: str) -> AgentRecord | None:
        return await self.one(self.sql.get, (name,))

    async def list(self) -> builtins.list[AgentRecord]:
        return [self.sql.record(row) for row in await self.rows(self.sql.list)]

    async def remove(self, name: str) -> bool:
        return await self.write(self.sql.delete, (name,), durable=True, appends=False) == 1

    async def request_cleanup(self, cleanup: SandboxCleanup) -> None:
        values = self.cleanup_sql.rows.values(cleanup)
        await self.write(self.cleanup_sql.add, values, durable=True, appends=False)

    async def cleanups(self) -> builtins.list[SandboxCleanup]:
        return [self.cleanup_sql.record(row) for row in await self.rows(self.cleanup_sql.list)]

    async def cleanup_failed(self, owner: str, error: str) -> None:
        await self.write(self.cleanup_sql.failed, (error, owner), durable=True, appends=False)

    async def cleanup_done(self, owner: str) -> None:
        await self.write(self.cleanup_sql.delete, (owner,), durable=True, appends=False)
