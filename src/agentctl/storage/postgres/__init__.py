"""The production storage: PostgreSQL holds checkpoints, the store, assistants, threads, runs,
crons and revisions for any number of replicas; the event log and the bus are injected
(Redis, see `agentctl.storage.redis`)."""

from __future__ import annotations

from typing import Any

from agentctl.storage.base import Bus, EventLog
from agentctl.storage.postgres.assistants import PostgresAssistants
from agentctl.storage.postgres.checkpointer import PoolPostgresSaver, pool_store
from agentctl.storage.postgres.crons import PostgresCrons
from agentctl.storage.postgres.database import Pool, migrate, open_pool
from agentctl.storage.postgres.revisions import PostgresRevisions
from agentctl.storage.postgres.runs import PostgresRuns
from agentctl.storage.postgres.threads import PostgresThreads

__all__ = ["PostgresStorage"]


class PostgresStorage:
    """Every table of a deployment, in the PostgreSQL database one pool reaches.

    Build it with `await PostgresStorage.open(...)`. `close()` closes the pool only: the
    event log and the bus given to `open` belong to whoever built them, who closes them
    (after this storage, since deleting a thread deletes its events)."""

    kind = "postgres"

    def __init__(
        self, pool: Pool, checkpointer: PoolPostgresSaver, store: Any, events: EventLog, bus: Bus
    ) -> None:
        self.pool = pool
        self.checkpointer = checkpointer
        self.store = store
        self.events = events
        self.bus = bus
        self.assistants = PostgresAssistants(pool)
        self.threads = PostgresThreads(pool, checkpointer, events)
        self.runs = PostgresRuns(pool)
        self.crons = PostgresCrons(pool)
        self.revisions = PostgresRevisions(pool)

    @classmethod
    async def open(
        cls, database_url: str, *, events: EventLog, bus: Bus, pool_size: int = 20
    ) -> PostgresStorage:
        """Connect to the database at `database_url` (a `postgresql://` URL) with a pool of
        at most `pool_size` connections, and bring its tables (ours, the checkpointer's and
        the store's) up to date. Safe when many replicas start at once."""
        pool = await open_pool(database_url, size=pool_size)
        try:
            checkpointer = PoolPostgresSaver(pool)
            store = pool_store(pool)
            await migrate(pool, checkpointer.setup, store.setup)
        except BaseException:
            await pool.close()
            raise
        return cls(pool, checkpointer, store, events, bus)

    async def close(self) -> None:
        await self.pool.close()
