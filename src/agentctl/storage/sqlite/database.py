"""The embedded database: one SQLite file in WAL mode, used from the event loop's thread.

Every statement here is a short indexed query on a local file, so it runs inline on the loop:
a commit in WAL mode with `synchronous=NORMAL` costs tens of microseconds, much less than
handing work to a thread. A committed transaction survives the process being killed.

A `Database` owns one connection and what goes with it: the lock serializing its use, the
appends waiting for the next commit, and the commit scheduled on the loop. It lives from
`Database.open` to `close`.

A full disk (or one that fails to write) is an outage of the embedded store, as PostgreSQL
going away is one of the production store (storage/outages.py), and nothing accepted is lost
to it. SQLite rolls back a transaction whose COMMIT fails, so every write of the open
transaction is kept (the journal) and applied again at once into a new one: reads still see
it, and it is committed once the disk has room. Meanwhile (`Disk`) the appends of runs in
flight are kept the same way, and every other write is refused with `DiskUnavailable`
(requests that must write get 503; the engine waits and tries again).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentctl.errors import DiskUnavailable
from agentctl.storage import outages
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
    # 5: the tasks of the A2A endpoint, with their artifacts.
    """
    CREATE TABLE a2a_tasks (
        task_id TEXT PRIMARY KEY,
        context_id TEXT NOT NULL,
        owner TEXT,
        state TEXT NOT NULL,
        position INTEGER NOT NULL,
        task TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX a2a_tasks_listed ON a2a_tasks (owner, position);
    CREATE INDEX a2a_tasks_by_context ON a2a_tasks (context_id);
    """,
    # 6: each registration of an agent's name is an incarnation of its own (its sandboxes
    # are named with it), and the sandbox cleanups deletions left to do.
    """
    ALTER TABLE platform_agents ADD COLUMN incarnation TEXT;
    CREATE TABLE platform_sandbox_cleanups (
        owner TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        requested_at TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        last_error TEXT
    );
    """,
    # 7: users' connections to user-owned MCP servers, the consent flows making them, the
    # clients registered at the servers' authorization servers and each server's tools.
    """
    CREATE TABLE user_connections (
        user_id TEXT NOT NULL,
        server TEXT NOT NULL,
        sealed BLOB NOT NULL,
        scopes TEXT NOT NULL,
        expires_at TEXT,
        connected_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        version INTEGER NOT NULL,
        PRIMARY KEY (user_id, server)
    );
    CREATE INDEX user_connections_by_server ON user_connections (server);
    CREATE TABLE consent_flows (
        flow_id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        server TEXT NOT NULL,
        thread_id TEXT,
        assistant_id TEXT,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        state_hash TEXT,
        binding_hash TEXT,
        sealed BLOB
    );
    CREATE UNIQUE INDEX consent_flows_by_state ON consent_flows (state_hash);
    CREATE INDEX consent_flows_expiry ON consent_flows (expires_at);
    CREATE TABLE oauth_clients (
        server TEXT NOT NULL,
        issuer TEXT NOT NULL,
        sealed BLOB NOT NULL,
        registered_at TEXT NOT NULL,
        PRIMARY KEY (server, issuer)
    );
    CREATE TABLE tool_catalogs (
        server TEXT PRIMARY KEY,
        tools TEXT NOT NULL,
        listed_at TEXT NOT NULL
    );
    """,
    # 8: what runs spent: each run's `usage`, a row per run and model (kept when the run
    # or its thread is deleted: spend is spend) and each run's trace (deleted with the run).
    """
    ALTER TABLE runs ADD COLUMN usage TEXT;
    CREATE TABLE usage (
        run_id TEXT NOT NULL,
        model TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        assistant_id TEXT NOT NULL,
        agent TEXT NOT NULL,
        user_id TEXT,
        day TEXT NOT NULL,
        at TEXT NOT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cached_tokens BIGINT NOT NULL,
        model_calls BIGINT NOT NULL,
        cost_usd REAL,
        PRIMARY KEY (run_id, model)
    );
    CREATE INDEX usage_by_day ON usage (day);
    CREATE INDEX usage_by_user ON usage (user_id, at);
    CREATE INDEX usage_by_time ON usage (at);
    CREATE INDEX usage_by_thread ON usage (thread_id, day);
    CREATE TABLE run_traces (
        run_id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        trace TEXT NOT NULL
    );
    CREATE INDEX run_traces_by_thread ON run_traces (thread_id);
    """,
    # 9: run starts, kept a few minutes for the runs-per-minute budgets (`[budgets]`): unlike
    # the runs table, they outlive their run and its thread (a stateless run deletes both);
    # and the usage rows by time covering what the agent's daily budgets sum (all users):
    # the sum reads the index alone.
    """
    DROP INDEX usage_by_time;
    CREATE INDEX usage_by_time ON usage (at, input_tokens, output_tokens, cost_usd);
    CREATE TABLE run_starts (
        user_id TEXT,
        started_at TEXT NOT NULL
    );
    CREATE INDEX run_starts_by_time ON run_starts (started_at);
    CREATE INDEX run_starts_by_user ON run_starts (user_id, started_at);
    """,
    # What compact events (storage/compact.py) refer to, once per thread: a token's
    # metadata, each message of a `values` event.
    """
    CREATE TABLE event_parts (
        thread_id TEXT NOT NULL,
        digest TEXT NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (thread_id, digest)
    ) WITHOUT ROWID;
    """,
    # Runs whose events wait to be folded, from the first event to the end: kept with the
    # end, so that a fold a crash or a full disk cut short is done later. The runs ended
    # before this table existed are in it too (their first event's millisecond).
    """
    CREATE TABLE event_folds (
        run_id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        first_ms INTEGER NOT NULL,
        first_seq INTEGER NOT NULL,
        end_ms INTEGER NOT NULL,
        end_seq INTEGER NOT NULL
    );
    INSERT OR IGNORE INTO event_folds
    SELECT e.run_id, e.thread_id, MIN(e.ms), 0, MAX(e.ms), MAX(e.seq)
    FROM events e
    WHERE e.run_id IN (SELECT run_id FROM events WHERE event = '__end__')
    GROUP BY e.thread_id, e.run_id;
    """,
]


# How long writes made on the loop may wait for their commit. A commit costs more than most
# writes: it writes every page the writes touched to the WAL, and concurrent runs touch a
# page each (their threads' events are apart in the table), so under load a commit writes
# some 130 KiB for 0.6 ms of CPU. Writes of the next 50 ms share one: a page written many
# times in that window is written once (at 32 users: 6 commits a run instead of 12). A
# crash loses at most these writes, which a retried run makes again from its last
# checkpoint; an accepted run is committed at once (`durable`), and a run's end before
# its clients hear of it (`Storage.sync`).
COMMIT_DELAY = 0.05
RETRY_DELAY = 1.0  # between tries after a commit failed (a locked, full or failing disk)
# Free space a full disk needs before writes are let through again (and at start, below
# which it counts as full): room for a few commits, so that it does not fill again at once.
ROOM_TO_RESUME = 1 << 20

_FULL, _IOERR = sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR
# A write of the journal: (statement, parameters, executemany?, a deferred append?).
Entry = tuple[str, Any, bool, bool]


def disk_error(exc: BaseException) -> bool:
    """Whether SQLite says its disk is full or failed to write (any I/O error)."""
    code = getattr(exc, "sqlite_errorcode", None) if isinstance(exc, sqlite3.Error) else None
    return code is not None and code & 0xFF in (_FULL, _IOERR)


def migrate(conn: sqlite3.Connection) -> None:
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        conn.executescript(f"BEGIN;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;")


@functools.lru_cache(maxsize=1024)
def _writes(statement: str) -> bool:
    return statement.lstrip()[:6].upper() != "SELECT"


class _Connection(sqlite3.Connection):
    """A connection that notes in `journal`, while one is set, every statement it runs
    that may write: what a transaction block did, to do it again if its commit fails."""

    journal: list[Entry] | None = None

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        cursor = super().execute(sql, parameters)
        if self.journal is not None and _writes(sql):
            self.journal.append((sql, parameters, False, False))
        return cursor

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        if self.journal is None:
            return super().executemany(sql, parameters)
        rows = list(parameters)
        cursor = super().executemany(sql, rows)
        self.journal.append((sql, rows, True, False))
        return cursor

    def cursor(self, factory: Any = None) -> sqlite3.Cursor:  # type: ignore[override]
        return super().cursor(factory or _Cursor)


class _Cursor(sqlite3.Cursor):
    """A cursor of a `_Connection`, noting its writes as the connection does."""

    def execute(self, sql: str, parameters: Any = (), /) -> _Cursor:
        super().execute(sql, parameters)
        journal = getattr(self.connection, "journal", None)
        if journal is not None and _writes(sql):
            journal.append((sql, parameters, False, False))
        return self

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> _Cursor:
        journal = getattr(self.connection, "journal", None)
        rows = list(parameters)
        super().executemany(sql, rows)
        if journal is not None:
            journal.append((sql, rows, True, False))
        return self


def _control(conn: sqlite3.Connection, statement: str) -> None:
    """BEGIN, SAVEPOINT, COMMIT, ...: never in the journal."""
    sqlite3.Connection.execute(conn, statement)


class Disk:
    """The disk holding a storage's database files, as an outage (storage/outages.py): out
    from a write it refused until a commit goes through with room to spare. Meanwhile
    writes are refused, and tried again at most every `RETRY_DELAY` (by `retry`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.service = outages.disk(folder)
        self.outage: DiskUnavailable | None = None
        self._next_try = 0.0
        # Tries to end the outage by committing what waits: `Database.recover` of the first
        # database opened on it (the storage's main one). Raises while the outage goes on.
        self.retry: Callable[[], None] | None = None

    def free_bytes(self) -> int:
        try:
            found = os.statvfs(self.folder)
        except OSError:
            return ROOM_TO_RESUME
        return found.f_bavail * found.f_frsize

    def condition(self, cause: BaseException | None) -> str:
        """What the disk's refusal (`cause`, a `disk_error`) says, for a person: "is full"
        (also for an I/O error when it has no room, e.g. for the WAL's index)."""
        if cause is None or (getattr(cause, "sqlite_errorcode", None) or 0) & 0xFF == _FULL:
            return "is full"
        return "is full" if self.free_bytes() < ROOM_TO_RESUME else f"cannot be written ({cause})"

    def fail(self, cause: BaseException | None = None) -> DiskUnavailable:
        """The disk refused a write (`cause`; None: it has no room left): the outage begins,
        logged once, or goes on. Returns the error to raise."""
        if self.outage is None:
            self.outage = DiskUnavailable(self.service, self.condition(cause))
            outages.outages.down(self.service, self.outage)
        self._next_try = time.monotonic() + RETRY_DELAY
        return self.refusal()

    def refusal(self) -> DiskUnavailable:
        outage = self.outage
        return DiskUnavailable(self.service, outage.condition if outage else "is full")

    def check(self) -> None:
        """Raise DiskUnavailable while the disk takes no writes; when a try is due, make it."""
        if self.outage is not None:
            if self.retry is None:
                raise self.refusal()
            self.retry()

    def due(self) -> bool:
        """Whether to try writing again now: a try per `RETRY_DELAY`, once a full disk has
        room again. Counts as the try."""
        outage = self.outage
        if outage is None:
            return True
        if time.monotonic() < self._next_try:
            return False
        self._next_try = time.monotonic() + RETRY_DELAY
        return outage.condition != "is full" or self.free_bytes() >= ROOM_TO_RESUME

    def recovered(self) -> None:
        if self.outage is not None:
            self.outage = None
            outages.outages.up(self.service)


class Database:
    """One connection to the file, with its lock, its deferred appends, its journal and its
    commit timer."""

    def __init__(self, conn: _Connection, disk: Disk) -> None:
        self.conn = conn
        self.disk = disk
        # Serializes use of the connection, in case a library calls the checkpointer from a
        # worker thread (the loop itself never interleaves: no transaction spans an await).
        self.lock = threading.RLock()
        # Appends waiting for the next commit: (statement, rows) in arrival order.
        self._deferred: list[tuple[str, list[tuple[Any, ...]]]] = []
        # Every write of the open transaction, in order: applied again when it is lost.
        self._journal: list[Entry] = []
        self._applied = True  # the journal is in the open transaction
        # Why a flush dropped rows the database refused: told to the next writer.
        self._refused: sqlite3.Error | None = None
        self._commit_scheduled = False
        self._closing = False
        if disk.retry is None:
            disk.retry = self.recover

    @classmethod
    def open(cls, path: Path | str, disk: Disk | None = None) -> Database:
        """Open (creating when needed) the database at `path` and apply pending migrations.
        `disk`: the outage state it shares with the other database of its storage.

        On a full disk, a database that needs no migration opens for reading (the disk is
        out from the start); one that must be created or upgraded cannot: DiskUnavailable."""
        path = Path(path)
        disk = disk or Disk(path.parent)
        full: BaseException | None = None
        try:
            try:
                conn = _connect(path)
            except sqlite3.OperationalError as exc:
                if not disk_error(exc):
                    raise
                # No room for the shared-memory index of the WAL: keep it in this process's
                # memory instead (the file is then this process's alone, as it is anyway).
                full, conn = exc, _connect(path, exclusive=True)
            try:
                migrate(conn)
            except BaseException:
                conn.close()
                raise
        except sqlite3.OperationalError as exc:
            if not disk_error(exc):
                raise
            raise DiskUnavailable(
                disk.service,
                disk.condition(exc),
                f"so the database {path.name} cannot be created or upgraded there — free "
                "space on it and start again",
            ) from exc
        db = cls(conn, disk)
        if full is not None or disk.free_bytes() < ROOM_TO_RESUME:
            disk.fail(full)
        return db

    def close(self) -> None:
        """Commit what is pending and close the connection; a commit still scheduled finds
        it closed. What a full disk still holds back is lost (logged): runs resume from
        their last stored checkpoint at the next start."""
        self._closing = True
        try:
            self._commit_now()
        except DiskUnavailable as exc:
            if self._journal or self._deferred:
                log.warning("%s %s: what runs wrote since is not stored; they resume from "
                            "their last stored checkpoint", exc.service, exc.condition)  # fmt: skip
        finally:
            self._deferred.clear()
            self._journal.clear()
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
        touches none of their tables, so they wait for the commit (atomic either way).

        While the disk is out, raises DiskUnavailable before the block runs; a block whose
        commit at once fails is undone and raises it too."""
        conn = self.conn
        with self.lock:
            self.disk.check()
            self._apply()
            if sees_appends:
                self.flush()
            if not conn.in_transaction:
                _control(conn, "BEGIN")
            _control(conn, "SAVEPOINT op")
            mark = len(self._journal)
            outer, conn.journal = conn.journal, self._journal
            try:
                yield
            except BaseException as exc:
                conn.journal = outer
                self._undo(mark, "op")
                if disk_error(exc):
                    raise self._fail(exc) from exc
                raise
            conn.journal = outer
            _control(conn, "RELEASE op")
            if durable or not self._commit_soon():
                self._commit_now(undo_from=mark)

    def commit(self) -> None:
        """Commit every write made so far. Raises DiskUnavailable while the disk takes
        none: they are kept, and committed once it does."""
        with self.lock:
            self.disk.check()
            self._commit_now()

    def recover(self) -> None:
        """End the disk's outage if it is time to try and the writes that wait go in;
        raises DiskUnavailable otherwise."""
        with self.lock:
            if self.disk.outage is None:
                return
            if not self.disk.due():
                raise self.disk.refusal()
            if self._journal or self._deferred or self.conn.in_transaction:
                self._commit_now()
            else:
                self._probe()
            self._spill(True)
            self.disk.recovered()

    def readable(self) -> None:
        """Make reads see every write made so far, should SQLite have rolled them back."""
        if not self._applied:
            with self.lock:
                self._apply()

    def defer(self, statement: str, rows: list[tuple[Any, ...]]) -> None:
        """Execute `statement` for each of `rows` with the next commit, in order with the
        other deferred rows: one `executemany` for the rows of many calls, and no savepoint.
        For appends (checkpoints, events) whose readers call `flush` first. Off the loop, at
        once. Taken while the disk is out too: runs in flight go on.

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
            self._apply()
            queue = self._deferred
            if not queue:
                return
            self._deferred = []
            conn = self.conn
            if not conn.in_transaction:
                _control(conn, "BEGIN")
            _control(conn, "SAVEPOINT deferred")
            try:
                for statement, rows in queue:
                    sqlite3.Connection.executemany(conn, statement, rows)
            except sqlite3.Error as exc:
                self._undo(len(self._journal), "deferred")
                if isinstance(exc, sqlite3.OperationalError):
                    self._deferred = queue + self._deferred
                    if disk_error(exc):
                        raise self._fail(exc) from exc
                    raise
                self._refused = exc
                count = sum(len(rows) for _, rows in queue)
                log.error(
                    "the embedded database refused %d rows; they were dropped: %s", count, exc
                )
                return
            _control(conn, "RELEASE deferred")
            self._journal.extend((statement, rows, True, True) for statement, rows in queue)

    # -- commits, and what a failed one leaves -------------------------------------------

    def _commit_now(self, undo_from: int | None = None) -> None:
        """COMMIT the open transaction. When it fails, SQLite has rolled it back: its
        writes are applied again (but for the block's from `undo_from` on, which its caller
        is told failed) and the error raised: DiskUnavailable for the disk."""
        conn = self.conn
        with self.lock:
            self._apply()
            self.flush()
            if conn.in_transaction:
                try:
                    _control(conn, "COMMIT")
                except sqlite3.Error as exc:
                    # Rolled back (a full disk): do it again. A block whose caller hears it
                    # failed is left out, also when the transaction is still open (locked).
                    if undo_from is not None or not conn.in_transaction:
                        if undo_from is not None:
                            self._journal[undo_from:] = [
                                entry for entry in self._journal[undo_from:] if entry[3]
                            ]
                        self._applied = False
                        self._apply(quiet=True)
                    if disk_error(exc):
                        raise self._fail(exc) from exc
                    raise
            self._journal.clear()

    def _probe(self) -> None:
        """A write of nothing but the database's header: the disk takes writes again."""
        conn = self.conn
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        try:
            _control(conn, "BEGIN")
            _control(conn, f"PRAGMA user_version = {version}")
            _control(conn, "COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                _control(conn, "ROLLBACK")
            if disk_error(exc):
                raise self._fail(exc) from exc
            raise

    def _fail(self, exc: BaseException) -> DiskUnavailable:
        """The disk refused a write: the outage begins or goes on, and a try is scheduled.
        Until the outage ends, the page cache holds the open transaction whole (no spill
        to the WAL mid-transaction, which would meet the full disk)."""
        self._spill(False)
        error = self.disk.fail(exc)
        if not self._closing:
            self._commit_soon(RETRY_DELAY)
        return error

    def _spill(self, on: bool) -> None:
        with self.lock:
            _control(self.conn, f"PRAGMA cache_spill = {'ON' if on else 'OFF'}")

    def _undo(self, mark: int, savepoint: str) -> None:
        """Roll back to `savepoint`, taking its writes (from `mark` on) off the journal;
        deferred rows flushed in it are queued again. When SQLite rolled back the whole
        transaction instead (a disk error mid-statement), the rest is applied again."""
        conn = self.conn
        undone = self._journal[mark:]
        del self._journal[mark:]
        again = [(statement, rows) for statement, rows, _, appended in undone if appended]
        if again:
            self._deferred = again + self._deferred
        if conn.in_transaction:
            _control(conn, f"ROLLBACK TO {savepoint}")
            _control(conn, f"RELEASE {savepoint}")
        else:
            self._applied = False
            self._apply(quiet=True)

    def _apply(self, *, quiet: bool = False) -> None:
        """Apply the journal again into a new transaction, after SQLite rolled the last one
        back; `quiet`: a failure leaves it to the next try instead of raising."""
        if self._applied:
            return
        conn = self.conn
        self._spill(False)
        try:
            if conn.in_transaction:
                _control(conn, "ROLLBACK")
            _control(conn, "BEGIN")
            for statement, params, many, _ in self._journal:
                if many:
                    sqlite3.Connection.executemany(conn, statement, params)
                else:
                    sqlite3.Connection.execute(conn, statement, params).fetchall()
        except sqlite3.Error as exc:
            if conn.in_transaction:
                _control(conn, "ROLLBACK")
            if quiet:
                return
            if disk_error(exc):
                raise self._fail(exc) from exc
            raise
        self._applied = True

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
        if self._closing and not self._deferred:  # close committed everything before it
            return
        try:
            self.commit()
        except sqlite3.ProgrammingError:  # closed: only writes made after close get here
            log.warning("writes made after the embedded database closed were dropped")
        except DiskUnavailable:  # logged once, by the outage
            self._commit_soon(RETRY_DELAY)
        except sqlite3.Error:
            log.exception("committing to the embedded database failed; retrying in 1 s")
            self._commit_soon(RETRY_DELAY)


def _connect(path: Path, *, exclusive: bool = False) -> _Connection:
    # Autocommit mode: every transaction is an explicit BEGIN ... COMMIT (see
    # `transaction`), as the langgraph store sharing this connection expects.
    conn = sqlite3.connect(
        str(path), check_same_thread=False, isolation_level=None, factory=_Connection
    )
    try:
        if exclusive:
            conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA foreign_keys=OFF")
        # Savepoints (every `transaction` and `flush`) journal the pages they change: in
        # memory, not in a temporary file written page by page.
        conn.execute("PRAGMA temp_store=MEMORY")
    except BaseException:
        conn.close()
        raise
    return conn


class SqliteTable(Table):
    """One table's statements run inline on the database's connection."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    async def rows(self, query: str, params: Sequence[Any] = ()) -> list[Row]:
        self.db.readable()
        return self.conn.execute(query, params).fetchall()

    async def row(self, query: str, params: Sequence[Any] = ()) -> Row | None:
        self.db.readable()
        found: Row | None = self.conn.execute(query, params).fetchone()
        return found

    async def page(self, rows: Query, count: Query) -> tuple[list[Row], int]:
        self.db.readable()
        found = self.conn.execute(rows.sql, rows.params).fetchall()
        (total,) = self.conn.execute(count.sql, count.params).fetchone()
        return found, total

    async def write(
        self, query: str, params: Sequence[Any] = (), *, durable: bool = False, appends: bool = True
    ) -> int:
        with self.db.transaction(durable=durable, sees_appends=appends):
            changed: int = self.conn.execute(query, params).rowcount
        return changed

    async def write_all(
        self, queries: Sequence[Query], *, durable: bool = False, appends: bool = True
    ) -> int:
        with self.db.transaction(durable=durable, sees_appends=appends):
            first, *rest = queries
            changed: int = self.conn.execute(first.sql, first.params).rowcount
            if changed:
                for query in rest:
                    self.conn.execute(query.sql, query.params)
        return changed

    async def write_rows(
        self, query: str, params: Sequence[Any] = (), *, durable: bool = False
    ) -> list[Row]:
        with self.db.transaction(durable=durable):
            return self.conn.execute(query, params).fetchall()
