"""The embedded database: one SQLite file in WAL mode, used from the event loop's thread.

Every statement here is a short indexed query on a local file, so it runs inline on the loop:
a commit in WAL mode with `synchronous=NORMAL` costs tens of microseconds, much less than
handing work to a thread. A committed transaction survives the process being killed.

A `Database` owns one connection and what goes with it: the lock serializing its use, the
appends waiting for the next commit, and the commit scheduled on the loop. It lives from
`Database.open` to `close`.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentctl.storage.sql.dialect import Query, Row
from agentctl.storage.sql.table import Table

log = logging.getLogger("agentctl.storage")

MIGRATIONS: list[str] = [
    # 1: the server's own tables (the checkpointer and the store create theirs).
    """
    CREATE TABLE assistant_versions (
        assistant_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        graph_id TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT,
        config TEXT NOT NULL,
        context TEXT NOT NULL,
        metadata TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (assistant_id, version)
    );
    CREATE TABLE assistants (
        assistant_id TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE threads (
        thread_id TEXT PRIMARY KEY,
        metadata TEXT NOT NULL,
        status TEXT NOT NULL,
        interrupts TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        assistant_id TEXT NOT NULL,
        status TEXT NOT NULL,
        metadata TEXT NOT NULL,
        multitask_strategy TEXT NOT NULL,
        kwargs TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        temporary INTEGER NOT NULL,
        not_before TEXT,
        error TEXT,
        cancel_reason TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX runs_by_thread ON runs (thread_id, created_at);
    CREATE INDEX runs_by_status ON runs (status, created_at);
    CREATE TABLE events (
        thread_id TEXT NOT NULL,
        ms INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        run_id TEXT NOT NULL,
        event TEXT NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (thread_id, ms, seq)
    ) WITHOUT ROWID;
    CREATE TABLE crons (
        cron_id TEXT PRIMARY KEY,
        assistant_id TEXT NOT NULL,
        thread_id TEXT,
        schedule TEXT NOT NULL,
        timezone TEXT,
        payload TEXT NOT NULL,
        next_run_date TEXT,
        end_time TEXT,
        on_run_completed TEXT,
        metadata TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        user_id TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX crons_due ON crons (enabled, next_run_date);
    """,
    # 2: run leases (the worker holding a running run, until when) and deployed revisions.
    """
    ALTER TABLE runs ADD COLUMN worker TEXT;
    ALTER TABLE runs ADD COLUMN lease_expires_at TEXT;
    CREATE INDEX runs_by_worker ON runs (worker, status);
    CREATE TABLE revisions (
        number INTEGER PRIMARY KEY AUTOINCREMENT,
        revision_id TEXT NOT NULL,
        manifest TEXT NOT NULL,
        archive BLOB NOT NULL,
        sealed_secrets BLOB NOT NULL,
        secret_names TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE active_revision (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        number INTEGER NOT NULL
    );
    """,
    # 3: fair admission: whom each run counts against (`Run.owner`); set on the runs still
    # to execute, the only ones claims look at.
    """
    ALTER TABLE runs ADD COLUMN owner TEXT;
    UPDATE runs SET owner = COALESCE('user:' || NULLIF(json_extract(kwargs, '$.user_id'), ''),
                                     'assistant:' || assistant_id)
        WHERE status IN ('pending', 'running');
    CREATE INDEX runs_pending_by_owner ON runs (owner, created_at, run_id)
        WHERE status = 'pending';
    CREATE INDEX runs_running_by_owner ON runs (owner) WHERE status = 'running';
    """,
    # 4: the platform's agents (used in the default database only).
    """
    CREATE TABLE platform_agents (
        name TEXT PRIMARY KEY,
        namespace TEXT,
        created_at TEXT NOT NULL
    );
    """,
]


# How long writes made on the loop may wait for their commit. A commit costs more than most
# writes (a run makes some twenty of them), so writes of the next few milliseconds share
# one. A crash loses at most these writes, which a retried run makes again from its last
# checkpoint; an accepted run is committed at once (`durable`).
COMMIT_DELAY = 0.01
RETRY_DELAY = 1.0  # after a commit failed (a locked or full disk)


def migrate(conn: sqlite3.Connection) -> None:
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        conn.executescript(f"BEGIN;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;")


class Database:
    """One connection to the file, with its lock, its deferred appends and its commit timer."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        # Serializes use of the connection, in case a library calls the checkpointer from a
        # worker thread (the loop itself never interleaves: no transaction spans an await).
        self.lock = threading.RLock()
        # Appends waiting for the next commit: (statement, rows) in arrival order.
        self._deferred: list[tuple[str, list[tuple[Any, ...]]]] = []
        # Why a flush dropped rows the database refused: told to the next writer.
        self._refused: sqlite3.Error | None = None
        self._commit_scheduled = False

    @classmethod
    def open(cls, path: Path | str) -> Database:
        """Open (creating when needed) the database at `path` and apply pending migrations."""
        # Autocommit mode: every transaction is an explicit BEGIN ... COMMIT (see
        # `transaction`), as the langgraph store sharing this connection expects.
        conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA foreign_keys=OFF")
        migrate(conn)
        return cls(conn)

    def close(self) -> None:
        """Commit what is pending and close the connection; a commit still scheduled finds
        it closed."""
        try:
            self.commit()
        finally:
            self._deferred.clear()
            self._refused = None
            self._commit_scheduled = False  # writes made after this are told they were dropped
            self.conn.close()

    @contextmanager
    def transaction(self, *, durable: bool = False, sees_appends: bool = True) -> Iterator[None]:
        """Apply the block's writes atomically (a savepoint), rolled back on error.

        Writes made on the event loop share one COMMIT, run `COMMIT_DELAY` later. `durable`
        commits before returning, for writes a client is about to be told about (an
        accepted run). Off the loop, every block commits at once. The deferred rows are
        written first, as the block may read or delete them; `sees_appends=False` says it
        touches none of their tables, so they wait for the commit (atomic either way)."""
        conn = self.conn
        with self.lock:
            if sees_appends:
                self.flush()
            if not conn.in_transaction:
                conn.execute("BEGIN")
            conn.execute("SAVEPOINT op")
            try:
                yield
            except BaseException:
                conn.execute("ROLLBACK TO op")
                conn.execute("RELEASE op")
                raise
            conn.execute("RELEASE op")
            if durable or not self._commit_soon():
                self.commit()

    def commit(self) -> None:
        with self.lock:
            self.flush()
            if self.conn.in_transaction:
                self.conn.execute("COMMIT")

    def defer(self, statement: str, rows: list[tuple[Any, ...]]) -> None:
        """Execute `statement` for each of `rows` with the next commit, in order with the
        other deferred rows: one `executemany` for the rows of many calls, and no savepoint.
        For appends (checkpoints, events) whose readers call `flush` first. Off the loop, at
        once.

        Raises when rows deferred before were refused, so that a run does not go on as if
        its checkpoints were stored."""
        with self.lock:
            refused, self._refused = self._refused, None
            if refused is not None:
                raise sqlite3.DatabaseError(
                    f"the embedded database refused earlier writes: {refused}"
                ) from refused
            queue = self._deferred
            if queue and queue[-1][0] == statement:
                queue[-1][1].extend(rows)
            else:
                queue.append((statement, list(rows)))
        if not self._commit_soon():
            self.commit()

    def flush(self) -> None:
        """Write the deferred rows into the open transaction, so that reads see them: all or
        none. When the database cannot write (locked, full, an I/O error) they stay queued
        and the error is raised; rows it refuses (a constraint) are dropped, logged, and the
        next `defer` raises."""
        with self.lock:
            queue = self._deferred
            if not queue:
                return
            self._deferred = []
            conn = self.conn
            if not conn.in_transaction:
                conn.execute("BEGIN")
            conn.execute("SAVEPOINT deferred")
            try:
                for statement, rows in queue:
                    conn.executemany(statement, rows)
            except sqlite3.Error as exc:
                conn.execute("ROLLBACK TO deferred")
                conn.execute("RELEASE deferred")
                if isinstance(exc, sqlite3.OperationalError):
                    self._deferred = queue + self._deferred
                    raise
                self._refused = exc
                count = sum(len(rows) for _, rows in queue)
                log.error(
                    "the embedded database refused %d rows; they were dropped: %s", count, exc
                )
                return
            conn.execute("RELEASE deferred")

    def _commit_soon(self, delay: float = COMMIT_DELAY) -> bool:
        """Schedule a commit `delay` from now on the running loop; False off the loop."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        if not self._commit_scheduled:
            self._commit_scheduled = True
            loop.call_later(delay, self._scheduled_commit)
        return True

    def _scheduled_commit(self) -> None:
        self._commit_scheduled = False
        try:
            self.commit()
        except sqlite3.ProgrammingError:  # closed: only writes made after close get here
            log.warning("writes made after the embedded database closed were dropped")
        except sqlite3.Error:
            log.exception("committing to the embedded database failed; retrying in 1 s")
            self._commit_soon(RETRY_DELAY)


class SqliteTable(Table):
    """One table's statements run inline on the database's connection."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    async def rows(self, query: str, params: Sequence[Any] = ()) -> list[Row]:
        return self.conn.execute(query, params).fetchall()

    async def row(self, query: str, params: Sequence[Any] = ()) -> Row | None:
        found: Row | None = self.conn.execute(query, params).fetchone()
        return found

    async def page(self, rows: Query, count: Query) -> tuple[list[Row], int]:
        found = self.conn.execute(rows.sql, rows.params).fetchall()
        (total,) = self.conn.execute(count.sql, count.params).fetchone()
        return found, total

    async def write(
        self, query: str, params: Sequence[Any] = (), *, durable: bool = False, appends: bool = True
    ) -> int:
        with self.db.transaction(durable=durable, sees_appends=appends):
            changed: int = self.conn.execute(query, params).rowcount
        return changed

    async def write_rows(
        self, query: str, params: Sequence[Any] = (), *, durable: bool = False
    ) -> list[Row]:
        with self.db.transaction(durable=durable):
            return self.conn.execute(query, params).fetchall()
