"""Users' connections to user-owned MCP servers, for either database: the connections
(`user_connections`), the consent flows making them (`consent_flows`), the clients
registered at the servers' authorization servers (`oauth_clients`) and the tools each server
listed (`tool_catalogs`). Each single-use or compare-and-swap step is one statement, so that
of replicas racing on one row exactly one wins."""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

from agentctl.storage.base import ConsentFlow, UserConnection, now
from agentctl.storage.sql.dialect import Dialect, Row, json_text, json_value
from agentctl.storage.sql.records import TableSql, columns, names
from agentctl.storage.sql.table import RecordTable

_CONNECTION = columns(
    "user_id, server, sealed, scopes:tuple, expires_at:time, connected_at:time, "
    "updated_at:time, version"
)
CONNECTION = names(_CONNECTION)
# What a replacement changes: every column but the key and the version (counted here).
_REPLACED = [column.name for column in _CONNECTION[2:-1]]
_FLOW = columns(
    "flow_id, user_id, server, thread_id, assistant_id, status, created_at:time, "
    "expires_at:time, state_hash, binding_hash, sealed"
)
FLOW = names(_FLOW)


class FlowSql(TableSql[ConsentFlow]):
    def __init__(self, dialect: Dialect) -> None:
        super().__init__(d := dialect, ConsentFlow, _FLOW, "consent_flows", "flow_id")
        p = d.param
        self.values = self.rows.values
        self.by_state = f"SELECT {FLOW} FROM consent_flows WHERE state_hash = {p}"
        sets = ", ".join(f"{column.name} = {p}" for column in _FLOW[1:])
        # The status is checked and changed by the one statement: a flow advances once.
        self.advance = f"UPDATE consent_flows SET {sets} WHERE flow_id = {p} AND status = {p}"
        self.purge = f"DELETE FROM consent_flows WHERE expires_at < {p}"
        self.delete_of_user = f"DELETE FROM consent_flows WHERE user_id = {p}"
        self.delete_of_server = f"{self.delete_of_user} AND server = {p}"

    def advance_values(self, flow: ConsentFlow, from_status: str) -> Row:
        return (*self.values(flow)[1:], flow.flow_id, from_status)


class ConnectionSql(TableSql[UserConnection]):
    """The connections' statements, with those of the other three tables."""

    def __init__(self, dialect: Dialect) -> None:
        super().__init__(d := dialect, UserConnection, _CONNECTION)
        p = d.param
        self.values = self.rows.values
        self.flows = FlowSql(dialect)
        key = f"user_id = {p} AND server = {p}"
        self.get = f"SELECT {CONNECTION} FROM user_connections WHERE {key}"
        self.list = (
            f"SELECT {CONNECTION} FROM user_connections WHERE user_id = {p} "
            f"ORDER BY {d.text('server')}"
        )
        self.counts = "SELECT server, COUNT(*) FROM user_connections GROUP BY server"
        self.delete_one = f"DELETE FROM user_connections WHERE {key}"
        self.delete_all = f"DELETE FROM user_connections WHERE user_id = {p}"
        self.delete_version = f"{self.delete_one} AND version = {p}"
        replaced = ", ".join(f"{name} = excluded.{name}" for name in _REPLACED)
        self.upsert = (
            f"INSERT INTO user_connections ({CONNECTION}) VALUES ({d.params(len(_CONNECTION))}) "
            f"ON CONFLICT (user_id, server) DO UPDATE SET {replaced}, "
            "version = user_connections.version + 1"
        )
        # On PostgreSQL a concurrent swap of the row waits for this one's commit, then
        # checks the version again: of two swaps from one version, one lands.
        sets = ", ".join(f"{name} = {p}" for name in _REPLACED)
        self.swap = (
            f"UPDATE user_connections SET {sets}, version = version + 1 "
            f"WHERE {key} AND version = {p}"
        )
        self.get_client = f"SELECT sealed FROM oauth_clients WHERE server = {p} AND issuer = {p}"
        self.put_client = (
            f"INSERT INTO oauth_clients (server, issuer, sealed, registered_at) "
            f"VALUES ({d.params(4)}) ON CONFLICT (server, issuer) DO UPDATE SET "
            "sealed = excluded.sealed, registered_at = excluded.registered_at"
        )
        self.get_catalog = f"SELECT tools FROM tool_catalogs WHERE server = {p}"
        self.put_catalog = (
            f"INSERT INTO tool_catalogs (server, tools, listed_at) VALUES ({d.params(3)}) "
            "ON CONFLICT (server) DO UPDATE SET tools = excluded.tools, "
            "listed_at = excluded.listed_at"
        )

    def upsert_values(self, connection: UserConnection) -> Row:
        return (*self.values(connection)[:-1], 1)

    def swap_values(self, connection: UserConnection, expected: int) -> Row:
        values = self.values(connection)
        return (*values[2:-1], connection.user_id, connection.server, expected)


class SqlConnectionStore(RecordTable[UserConnection]):
    """The `ConnectionStore` both SQL backends share. Every write is committed before it
    returns: a client is told about it (a flow to open, a connection made)."""

    sql: ConnectionSql

    async def get(self, user_id: str, server: str) -> UserConnection | None:
        return await self.one(self.sql.get, (user_id, server))

    async def put(self, connection: UserConnection, *, expected_version: int | None) -> bool:
        if expected_version is None:
            await self._write(self.sql.upsert, self.sql.upsert_values(connection))
            return True
        values = self.sql.swap_values(connection, expected_version)
        return await self._write(self.sql.swap, values) == 1

    async def delete(
        self, user_id: str, server: str | None = None, *, version: int | None = None
    ) -> int:
        if server is None:
            if version is not None:
                raise ValueError("a version is of one connection: name its server")
            return await self._write(self.sql.delete_all, (user_id,))
        if version is not None:
            return await self._write(self.sql.delete_version, (user_id, server, version))
        return await self._write(self.sql.delete_one, (user_id, server))

    async def list(self, user_id: str) -> builtins.list[UserConnection]:
        return [self.sql.record(row) for row in await self.rows(self.sql.list, (user_id,))]

    async def counts(self) -> dict[str, int]:
        return {server: int(count) for server, count in await self.rows(self.sql.counts)}

    async def add_flow(self, flow: ConsentFlow) -> None:
        await self._write(self.sql.flows.insert, self.sql.flows.values(flow))

    async def get_flow(self, flow_id: str) -> ConsentFlow | None:
        return await self._flow(self.sql.flows.get, flow_id)

    async def flow_by_state(self, state_hash: str) -> ConsentFlow | None:
        return await self._flow(self.sql.flows.by_state, state_hash)

    async def advance_flow(self, flow: ConsentFlow, *, from_status: str) -> bool:
        values = self.sql.flows.advance_values(flow, from_status)
        return await self._write(self.sql.flows.advance, values) == 1

    async def purge_flows(self, before: datetime) -> int:
        time = self.sql.dialect.time(before)
        return await self.write(self.sql.flows.purge, (time,), appends=False)

    async def delete_flows(self, user_id: str, server: str | None = None) -> int:
        if server is None:
            return await self._write(self.sql.flows.delete_of_user, (user_id,))
        return await self._write(self.sql.flows.delete_of_server, (user_id, server))

    async def get_client(self, server: str, issuer: str) -> bytes | None:
        row = await self.row(self.sql.get_client, (server, issuer))
        return None if row is None else bytes(row[0])

    async def put_client(self, server: str, issuer: str, sealed: bytes) -> None:
        registered = self.sql.dialect.time(now())
        await self._write(self.sql.put_client, (server, issuer, sealed, registered))

    async def get_catalog(self, server: str) -> builtins.list[dict[str, Any]] | None:
        row = await self.row(self.sql.get_catalog, (server,))
        return None if row is None else list(json_value(row[0]))

    async def put_catalog(self, server: str, tools: builtins.list[dict[str, Any]]) -> None:
        listed = self.sql.dialect.time(now())
        await self._write(self.sql.put_catalog, (server, json_text(tools), listed))

    async def _flow(self, query: str, value: str) -> ConsentFlow | None:
        row = await self.row(query, (value,))
        return None if row is None else self.sql.flows.record(row)

    async def _write(self, query: str, params: Row) -> int:
        return await self.write(query, params, durable=True, appends=False)
