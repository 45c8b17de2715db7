"""The embedded storage: one SQLite file holds checkpoints, threads, runs, crons and the
event log; a second one holds the store (memory), which libraries also use from threads."""

from __future__ import annotations

from pathlib import Path

from agentctl.storage.bus import LocalBus
from agentctl.storage.sqlite.assistants import SqliteAssistants
from agentctl.storage.sqlite.checkpointer import LoopSqliteSaver, LoopSqliteStore
from agentctl.storage.sqlite.crons import SqliteCrons
from agentctl.storage.sqlite.database import close, connect, lock_of
from agentctl.storage.sqlite.events import SqliteEventLog
from agentctl.storage.sqlite.revisions import SqliteRevisions
from agentctl.storage.sqlite.runs import SqliteRuns
from agentctl.storage.sqlite.threads import SqliteThreads

__all__ = ["SqliteStorage"]


class SqliteStorage:
    """Every table of one server process: the server's in the SQLite file at `path`, the
    store's in the one at `store_path`. Its bus reaches this process only: one process at a
    time serves an embedded database."""

    kind = "sqlite"

    def __init__(self, path: Path, store_path: Path) -> None:
        self.path = path
        self.conn = connect(path)
        self.checkpointer = LoopSqliteSaver(self.conn)
        self.checkpointer.lock = lock_of(self.conn)
        self.checkpointer.setup()
        self.store_conn = connect(store_path)
        self.store = LoopSqliteStore(self.store_conn)
        self.store.setup()
        self.assistants = SqliteAssistants(self.conn)
        self.events = SqliteEventLog(self.conn)
        self.threads = SqliteThreads(self.conn, self.checkpointer, self.events)
        self.runs = SqliteRuns(self.conn)
        self.crons = SqliteCrons(self.conn)
        self.revisions = SqliteRevisions(self.conn)
        self.bus = LocalBus()

    async def unavailable(self) -> list[str]:
        return []  # a file of this process's: there when the process is

    async def close(self) -> None:
        await self.bus.close()
        close(self.conn)
        close(self.store_conn)
