"""The production storage: PostgreSQL holds checkpoints, the store, assistants, threads, runs,
crons and revisions for any number of replicas; the event log and the bus are injected
(Redis, see `agentctl.storage.redis`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agentctl.storage.base import Bus, EventLog
from agentctl.storage.outages import POSTGRES
from agentctl.storage.postgres.a2a_tasks import PostgresA2ATasks
from agentctl.storage.postgres.agents import PostgresAgents
from agentctl.storage.postgres.assistants import PostgresAssistants
from agentctl.storage.postgres.checkpointer import PoolPostgresSaver, pool_store
from agentctl.storage.postgres.connections import PostgresConnections
from agentctl.storage.postgres.crons import PostgresCrons
from agentctl.storage.postgres.database import Pool, migrate, open_pool
from agentctl.storage.postgres.revisions import PostgresRevisions
from agentctl.storage.postgres.runs import PostgresRuns
from agentctl.storage.postgres.threads import PostgresThreads
from agentctl.storage.postgres.usage import PostgresUsage
from agentctl.storage.sql.threads import ThreadData

__all__ = ["PostgresStorage"]

Probe = Callable[[], Awaitable[object]]
PROBE_SECONDS = 1.0  # how long `unavailable()` waits for each service's answer


class PostgresStorage:
    """Every table of a deployment, in the PostgreSQL database one pool reaches.

    Build it with `await PostgresStorage.open(...)`. `close()` closes the pool only: the
    event log and the bus given to `open` belong to whoever built them, who closes them
    (after this storage, since deleting a thread deletes its events)."""

    kind = "postgres"

    def __init__(
        self,
        pool: Pool,
        checkpointer: PoolPostgresSaver,
        store: Any,
        events: EventLog,
        bus: Bus,
        probes: Mapping[str, Probe] | None = None,
        schema: str | None = None,
    ) -> None:
        self.pool = pool
        self.schema = schema
        self.probes = {POSTGRES: self._ping, **(probes or {})}
        self.checkpointer = checkpointer
        self.store = store
        self.events = events
        self.bus = bus
        self.assistants = PostgresAssistants(pool)
        self.threads = PostgresThreads(pool, ThreadData(events, checkpointer))
        self.runs = PostgresRuns(pool)
        self.crons = PostgresCrons(pool)
        self.revisions = PostgresRevisions(pool)
        self.agents = PostgresAgents(pool)
        self.a2a_tasks = PostgresA2ATasks(pool)
        self.connections = PostgresConnections(pool)
        self.usage = PostgresUsage(pool)

    @classmethod
    async def open(
        cls,
        database_url: str,
        *,
        events: EventLog,
        bus: Bus,
        pool_size: int = 20,
        probes: Mapping[str, Probe] | None = None,
        schema: str | None = None,
    ) -> PostgresStorage:
        """Connect to the database at `database_url` (a `postgresql://` URL) with a pool of
        at most `pool_size` connections, and bring its tables (ours, the checkpointer's and
        the store's) up to date. Safe when many replicas start at once. `probes` ask the
        other services (by name) whether they answer, for `unavailable()`. With `schema`
        (a name of [a-z0-9_]), every table is in that schema, created if missing; else in
        the connection's default one."""
        pool = await open_pool(database_url, size=pool_size, schema=schema)
        try:
            checkpointer = PoolPostgresSaver(pool)
            store = pool_store(pool)
            await migrate(pool, checkpointer.setup, store.setup, schema=schema)
        except BaseException:
            await pool.close()
            raise
        return cls(pool, checkpointer, store, events, bus, probes, schema)

    async def unavailable(self) -> list[str]:
        async def answers(probe: Probe) -> bool:
            try:
                async with asyncio.timeout(PROBE_SECONDS):
                    await probe()
            except (TimeoutError, Exception):
                return False
            return True

        names = list(self.probes)
        results = await asyncio.gather(*(answers(self.probes[name]) for name in names))
        return [name for name, up in zip(names, results, strict=True) if not up]

    async def sync(self) -> None:
        return None  # every statement commits as it ends; Redis has each event once appended

    async def _ping(self) -> None:
        async with self.pool.connection(timeout=PROBE_SECONDS) as conn:
            await conn.execute("SELECT 1")

    async def close(self) -> None:
        await self.pool.close()
