"""The embedded storage: one SQLite file holds checkpoints, threads, runs, crons and the
event log; a second one holds the store (memory), which libraries also use from threads."""

from __future__ import annotations

from pathlib import Path

from agentctl.errors import DiskUnavailable
from agentctl.storage.bus import LocalBus
from agentctl.storage.sql.threads import ThreadData
from agentctl.storage.sqlite.a2a_tasks import SqliteA2ATasks
from agentctl.storage.sqlite.agents import SqliteAgents
from agentctl.storage.sqlite.assistants import SqliteAssistants
from agentctl.storage.sqlite.checkpointer import LoopSqliteSaver, LoopSqliteStore
from agentctl.storage.sqlite.connections import SqliteConnections
from agentctl.storage.sqlite.crons import SqliteCrons
from agentctl.storage.sqlite.database import Database, Disk
from agentctl.storage.sqlite.events import SqliteEventLog
from agentctl.storage.sqlite.revisions import SqliteRevisions
from agentctl.storage.sqlite.runs import SqliteRuns
from agentctl.storage.sqlite.threads import SqliteThreads
from agentctl.storage.sqlite.usage import SqliteUsage

__all__ = ["SqliteStorage"]


class SqliteStorage:
    """Every table of one server process: the server's in the SQLite file at `path`, the
    store's in the one at `store_path`. Its bus reaches this process only: one process at a
    time serves an embedded database. A full disk is an outage of both files (`Disk`)."""

    kind = "sqlite"

    def __init__(self, path: Path, store_path: Path, *, fold_after: float | None = 30.0) -> None:
        self.path = path
        self.disk = Disk(path.parent)
        self.database = Database.open(path, self.disk)  # first: it commits what waits
        try:
            self.store_database = Database.open(store_path, self.disk)
        except BaseException:
            self.database.close()
            raise
        # The connections themselves, which `agentctl dev` lets run inline on the loop.
        self.conn = self.database.conn
        self.store_conn = self.store_database.conn
        self.checkpointer = LoopSqliteSaver(self.database)
        self.checkpointer.setup()
        self.store = LoopSqliteStore(self.store_conn, self.disk)
        self.store.setup()
        self.assistants = SqliteAssistants(self.database)
        self.events = SqliteEventLog(self.database, fold_after=fold_after)
        self.threads = SqliteThreads(self.database, ThreadData(self.events, self.checkpointer))
        self.runs = SqliteRuns(self.database)
        self.crons = SqliteCrons(self.database)
        self.revisions = SqliteRevisions(self.database)
        self.agents = SqliteAgents(self.database)
        self.a2a_tasks = SqliteA2ATasks(self.database)
        self.connections = SqliteConnections(self.database)
        self.usage = SqliteUsage(self.database)
        self.bus = LocalBus()

    async def unavailable(self) -> list[str]:
        """Its disk while it takes no writes (asking is a try to end that, when due)."""
        try:
            self.disk.check()
        except DiskUnavailable:
            return [self.disk.service]
        return []

    async def sync(self) -> None:
        self.database.commit()

    async def close(self) -> None:
        await self.bus.close()
        self.events.close()
        self.database.close()
        self.store_database.close()
