"""The embedded storage: one SQLite file holds checkpoints, the store, threads, runs, crons
and the event log."""

from __future__ import annotations

from pathlib import Path

from agentctl.storage.sqlite.assistants import SqliteAssistants
from agentctl.storage.sqlite.checkpointer import LoopSqliteSaver, LoopSqliteStore
from agentctl.storage.sqlite.crons import SqliteCrons
from agentctl.storage.sqlite.database import connect
from agentctl.storage.sqlite.events import SqliteEventLog
from agentctl.storage.sqlite.runs import SqliteRuns
from agentctl.storage.sqlite.threads import SqliteThreads

__all__ = ["SqliteStorage"]


class SqliteStorage:
    """Every table of one server process, in the SQLite file at `path`."""

    def __init__(self, path: Path | str) -> None:
        self.path = path
        self.conn = connect(path)
        self.checkpointer = LoopSqliteSaver(self.conn)
        self.checkpointer.setup()
        self.store = LoopSqliteStore(self.conn)
        self.store.setup()
        self.assistants = SqliteAssistants(self.conn)
        self.threads = SqliteThreads(self.conn, self.checkpointer)
        self.runs = SqliteRuns(self.conn)
        self.events = SqliteEventLog(self.conn)
        self.crons = SqliteCrons(self.conn)

    async def close(self) -> None:
        self.events.flush()
        self.conn.close()
