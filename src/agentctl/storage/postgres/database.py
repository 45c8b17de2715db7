"""The PostgreSQL database: a connection pool, the server's versioned migrations, and the
access every table module shares (`PostgresTable`).

Every replica applies pending migrations when it starts. They run under a session advisory
lock (one per schema), so replicas starting together apply each one exactly once; a replica
that finds the lock taken polls for it rather than waiting inside a statement, because a
waiting statement holds a snapshot that the libraries' `CREATE INDEX CONCURRENTLY` would
wait for in turn.

A storage namespace (`storage/namespace.py`) keeps all its tables in a schema of its own:
every connection of its pool has that schema alone on its `search_path` (set when it
connects), and its migrations create the schema first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import AsyncConnection
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import DictRow, dict_row, tuple_row
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool
from psycopg_pool.base import AttemptWithBackoff

from agentctl.errors import RuntimeFailure
from agentctl.storage.namespace import lock_key, quoted
from agentctl.storage.outages import POSTGRES, outages
from agentctl.storage.sql.dialect import Query, Row, json_value
from agentctl.storage.sql.table import Table

Pool = AsyncConnectionPool[AsyncConnection[DictRow]]

CONNECTION_WAIT_SECONDS = 5.0
# How long the deletion of an agent waits for the other replicas to close its pools.
DROP_WAIT_SECONDS = 10.0
log = logging.getLogger("agentctl.storage")

# psycopg_pool tries to replace a lost connection after 1, 2, 4, 8… s: a database back after
# 15 s would be used up to 16 s later. Try every half second instead (with its jitter).
AttemptWithBackoff.INITIAL_DELAY = 0.5
AttemptWithBackoff.DELAY_BACKOFF = 1.0
# Its warning at each attempt would fill the log; storage/outages.py logs an outage once.
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

# Advisory lock keys (any bigint no other code of ours uses).
MIGRATION_LOCK = 0x6167_6E74_6D69_6701
# A transaction left open longer than this is ended by PostgreSQL, with its locks: a replica
# that stalls mid-transaction (SIGSTOP, a throttled container) holds no row another replica
# needs for longer. Our transactions run their statements back to back.
IDLE_IN_TRANSACTION_MS = 10_000

MIGRATIONS: list[str] = [
    # 1: the server's own tables (the checkpointer, the store and the event log keep theirs).
    """
    CREATE TABLE assistant_versions (
        assistant_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        graph_id TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT,
        config JSONB NOT NULL,
        context JSONB NOT NULL,
        metadata JSONB NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (assistant_id, version)
    );
    CREATE TABLE assistants (
        assistant_id TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
    );
    CREATE TABLE threads (
        thread_id TEXT PRIMARY KEY,
        metadata JSONB NOT NULL,
        status TEXT NOT NULL,
        interrupts JSONB NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
    );
    CREATE INDEX threads_metadata ON threads USING gin (metadata jsonb_path_ops);
    CREATE INDEX threads_created ON threads (created_at);
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        assistant_id TEXT NOT NULL,
        status TEXT NOT NULL,
        metadata JSONB NOT NULL,
        multitask_strategy TEXT NOT NULL,
        kwargs JSONB NOT NULL,
        attempt INTEGER NOT NULL,
        temporary BOOLEAN NOT NULL,
        not_before TIMESTAMPTZ,
        error JSONB,
        cancel_reason TEXT,
        worker TEXT,
        lease_expires_at TIMESTAMPTZ,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
    );
    CREATE INDEX runs_by_thread ON runs (thread_id, created_at);
    CREATE INDEX runs_pending ON runs (created_at, run_id) WHERE status = 'pending';
    CREATE INDEX runs_running ON runs (worker) WHERE status = 'running';
    CREATE TABLE crons (
        cron_id TEXT PRIMARY KEY,
        assistant_id TEXT NOT NULL,
        thread_id TEXT,
        schedule TEXT NOT NULL,
        timezone TEXT,
        payload JSONB NOT NULL,
        next_run_date TIMESTAMPTZ,
        end_time TIMESTAMPTZ,
        on_run_completed TEXT,
        metadata JSONB NOT NULL,
        enabled BOOLEAN NOT NULL,
        user_id TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
    );
    CREATE INDEX crons_due ON crons (next_run_date) WHERE enabled;
    CREATE TABLE revisions (
        number BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        revision_id TEXT NOT NULL,
        manifest JSONB NOT NULL,
        archive BYTEA NOT NULL,
        sealed_secrets BYTEA NOT NULL,
        secret_names JSONB NOT NULL,
        created_at TIMESTAMPTZ NOT NULL
    );
    CREATE TABLE active_revision (
        id BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
        number BIGINT NOT NULL REFERENCES revisions (number)
    );
    """,
    # 2: fair admission: whom each run counts against (`Run.owner`); set on the runs still
    # to execute, the only ones claims look at.
    """
    ALTER TABLE runs ADD COLUMN owner TEXT;
    UPDATE runs SET owner = COALESCE('user:' || NULLIF(kwargs->>'user_id', ''),
                                     'assistant:' || assistant_id)
        WHERE status IN ('pending', 'running');
    CREATE INDEX runs_pending_by_owner ON runs (owner, created_at, run_id COLLATE "C")
        WHERE status = 'pending';
    CREATE INDEX runs_running_by_owner ON runs (owner) WHERE status = 'running';
    """,
    # 3: the platform's agents (used in the default schema only).
    """
    CREATE TABLE platform_agents (
        name TEXT PRIMARY KEY,
        namespace TEXT,
        created_at TIMESTAMPTZ NOT NULL
    );
    """,
    # 4: the tasks of the A2A endpoint, with their artifacts.
    """
    CREATE TABLE a2a_tasks (
        task_id TEXT PRIMARY KEY,
        context_id TEXT NOT NULL,
        owner TEXT,
        state TEXT NOT NULL,
        position BIGINT NOT NULL,
        task JSONB NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
    );
    CREATE INDEX a2a_tasks_listed ON a2a_tasks (owner, position);
    CREATE INDEX a2a_tasks_by_context ON a2a_tasks (context_id);
    """,
    # 5: each registration of an agent's name is an incarnation of its own (its sandboxes
    # are named with it), and the sandbox cleanups deletions left to do.
    """
    ALTER TABLE platform_agents ADD COLUMN incarnation TEXT;
    CREATE TABLE platform_sandbox_cleanups (
        owner TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        requested_at TIMESTAMPTZ NOT NULL,
        attempts INTEGER NOT NULL,
        last_error TEXT
    );
    """,
    # 6: users' connections to user-owned MCP servers, the consent flows making them, the
    # clients registered at the servers' authorization servers and each server's tools
    # (as TEXT: in the server's order, each object's keys in theirs, which JSONB sorts).
    """
    CREATE TABLE user_connections (
        user_id TEXT NOT NULL,
        server TEXT NOT NULL,
        sealed BYTEA NOT NULL,
        scopes JSONB NOT NULL,
        expires_at TIMESTAMPTZ,
        connected_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL,
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
        created_at TIMESTAMPTZ NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL,
        state_hash TEXT,
        binding_hash TEXT,
        sealed BYTEA
    );
    CREATE UNIQUE INDEX consent_flows_by_state ON consent_flows (state_hash);
    CREATE INDEX consent_flows_expiry ON consent_flows (expires_at);
    CREATE TABLE oauth_clients (
        server TEXT NOT NULL,
        issuer TEXT NOT NULL,
        sealed BYTEA NOT NULL,
        registered_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (server, issuer)
    );
    CREATE TABLE tool_catalogs (
        server TEXT PRIMARY KEY,
        tools TEXT NOT NULL,
        listed_at TIMESTAMPTZ NOT NULL
    );
    """,
    # 7: what runs spent: each run's `usage`, a row per run and model (kept when the run
    # or its thread is deleted: spend is spend) and each run's trace (deleted with the run).
    """
    ALTER TABLE runs ADD COLUMN usage JSONB;
    CREATE TABLE usage (
        run_id TEXT NOT NULL,
        model TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        assistant_id TEXT NOT NULL,
        agent TEXT NOT NULL,
        user_id TEXT,
        day TEXT NOT NULL,
        at TIMESTAMPTZ NOT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cached_tokens BIGINT NOT NULL,
        model_calls BIGINT NOT NULL,
        cost_usd DOUBLE PRECISION,
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
    # 8: run starts, kept a few minutes for the runs-per-minute budgets (`[budgets]`): unlike
    # the runs table, they outlive their run and its thread (a stateless run deletes both);
    # and the usage rows by time covering what the agent's daily budgets sum (all users):
    # the sum reads the index alone.
    """
    DROP INDEX usage_by_time;
    CREATE INDEX usage_by_time ON usage (at) INCLUDE (input_tokens, output_tokens, cost_usd);
    CREATE TABLE run_starts (
        user_id TEXT,
        started_at TIMESTAMPTZ NOT NULL
    );
    CREATE INDEX run_starts_by_time ON run_starts (started_at);
    CREATE INDEX run_starts_by_user ON run_starts (user_id, started_at);
    """,
]


async def open_pool(database_url: str, *, size: int, schema: str | None = None) -> Pool:
    """A pool of at most `size` connections (one kept open, more opened as needed and
    closed after ten idle minutes), configured as the langgraph libraries expect
    (autocommit, dict rows, each statement prepared at its first use), on `schema` alone
    when given; open when returned. Raises `RuntimeFailure` saying why when the database
    cannot be reached."""
    try:  # one connection first: its error says why (the pool's would only time out)
        await (await AsyncConnection.connect(database_url, connect_timeout=10)).close()
    except psycopg.Error as exc:
        raise RuntimeFailure(
            f"cannot connect to PostgreSQL at {_redacted(database_url)}: {exc} — check "
            "the database URL and that the server is running"
        ) from exc
    freshness = _Freshness()
    kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    # The connection's defaults for the session: `RESET ALL` keeps them.
    options = str(conninfo_to_dict(database_url).get("options") or "")
    options += f" -c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}"
    if schema is not None:
        options += f" -c search_path={quoted(schema)}"
        kwargs["application_name"] = schema  # how `drop_schema` sees who still uses it
    kwargs["options"] = options.strip()
    pool = AsyncConnectionPool(
        database_url,
        min_size=1,
        max_size=size,
        open=False,
        kwargs=kwargs,
        configure=_read_json,
        check=freshness.check,
        reset=freshness.returned,
        # While the database is down a request waits this long for a connection, then is
        # answered 503 (a run waits on, see storage/outages.py).
        timeout=CONNECTION_WAIT_SECONDS,
    )
    await pool.open(wait=True)
    return cast(Pool, pool)


async def _read_json(conn: AsyncConnection[Any]) -> None:
    """JSON and JSONB read as the SQLite backend reads them (`json_value`), by our tables
    and the libraries' alike: a value an older version stored (`1e30`, which JSONB gives
    back as an integer of 31 digits) reads as one every answer can hold."""
    set_json_loads(json_value, conn)


class _Freshness:
    """Checks a connection as it is taken from the pool (one round trip) when it may be
    broken: it sat idle more than `STALE_SECONDS`, or PostgreSQL was down within the last
    `OUTAGE_SECONDS`. A restart of the database leaves the pool idle or failing for longer
    than that, so no request is given a connection the restart broke (one that races a
    restart of under 2 s is answered 503 once), and a busy pool pays no round trip per
    statement."""

    STALE_SECONDS = 2.0
    OUTAGE_SECONDS = 60.0

    def __init__(self) -> None:
        self._returned: weakref.WeakKeyDictionary[AsyncConnection[Any], float] = (
            weakref.WeakKeyDictionary()
        )

    async def returned(self, conn: AsyncConnection[Any]) -> None:
        self._returned[conn] = time.monotonic()

    async def check(self, conn: AsyncConnection[Any]) -> None:
        returned = self._returned.get(conn)
        stale = returned is None or time.monotonic() - returned > self.STALE_SECONDS
        if stale or outages.lately(POSTGRES, self.OUTAGE_SECONDS):
            await AsyncConnectionPool.check_connection(conn)


def _redacted(url: str) -> str:
    """`url` without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


async def migrate(
    pool: Pool, *more: Callable[[], Awaitable[None]], schema: str | None = None
) -> None:
    """Create `schema` (when given: the pool's), apply the pending MIGRATIONS, then run each
    of `more` (the libraries' own setups), with no other replica doing the same meanwhile."""
    async with pool.connection() as conn, migration_lock(conn, schema):
        if schema is not None:
            await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quoted(schema)}")
            current = await fetch_value(conn, "SELECT current_schema()")
            if current != schema:
                raise RuntimeFailure(
                    f"PostgreSQL connections meant for schema {schema} use {current!r}: "
                    "something between the server and PostgreSQL (a pooler such as "
                    "PgBouncer) drops the `options` a connection starts with — connect to "
                    "PostgreSQL directly, or let the pooler pass `options`"
                )
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS agentctl_migrations (version INTEGER PRIMARY KEY, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        cursor = await conn.execute("SELECT version FROM agentctl_migrations")
        applied = {row["version"] for row in await cursor.fetchall()}
        for version, script in enumerate(MIGRATIONS, start=1):
            if version in applied:
                continue
            async with conn.transaction():
                await conn.execute(script, prepare=False)
                await conn.execute(
                    "INSERT INTO agentctl_migrations (version) VALUES (%s)", (version,)
                )
        for setup in more:
            await setup()


@asynccontextmanager
async def migration_lock(conn: AsyncConnection[DictRow], schema: str | None) -> AsyncIterator[None]:
    """Hold the migration lock of `schema` (None: the default one) on `conn`: taken by
    polling, never by waiting inside a statement (see above)."""
    key = lock_key(MIGRATION_LOCK, schema)
    while not (await fetch_value(conn, "SELECT pg_try_advisory_lock(%s)", key)):
        await asyncio.sleep(0.05)
    try:
        yield
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


async def fetch_value(conn: AsyncConnection[DictRow], query: str, *params: Any) -> Any:
    """The first column of the first row `query` returns (None when no row)."""
    cursor = await conn.execute(query, params)
    row = await cursor.fetchone()
    return None if row is None else next(iter(row.values()))


class PostgresTable(Table):
    """One table's statements run through the pool."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def rows(self, query: str, params: Sequence[Any] = ()) -> list[Row]:
        async with self.pool.connection() as conn:
            return await rows(conn, query, params)

    async def row(self, query: str, params: Sequence[Any] = ()) -> Row | None:
        found = await self.rows(query, params)
        return found[0] if found else None

    async def page(self, rows_query: Query, count_query: Query) -> tuple[list[Row], int]:
        async with self.pool.connection() as conn:
            found = await rows(conn, rows_query.sql, rows_query.params)
            ((total,),) = await rows(conn, count_query.sql, count_query.params)
        return found, total

    # Every statement commits when it ends (autocommit), durably: `durable` and `appends`
    # concern the embedded database only.
    async def write(
        self, query: str, params: Sequence[Any] = (), *, durable: bool = False, appends: bool = True
    ) -> int:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(query, params)
        return cursor.rowcount

    async def write_all(
        self, queries: Sequence[Query], *, durable: bool = False, appends: bool = True
    ) -> int:
        first, *rest = queries
        async with self.pool.connection() as conn, conn.transaction():
            changed = (await conn.execute(first.sql, first.params)).rowcount
            if changed and rest:
                async with conn.pipeline():  # the others sent together: one round trip
                    for query in rest:
                        await conn.execute(query.sql, query.params)
        return changed

    async def write_rows(
        self, query: str, params: Sequence[Any] = (), *, durable: bool = False
    ) -> list[Row]:
        return await self.rows(query, params)


async def rows(conn: AsyncConnection[DictRow], query: str, params: Sequence[Any]) -> list[Row]:
    """What `query` returns (nothing for a statement that returns no rows), as tuples."""
    async with conn.cursor(row_factory=tuple_row) as cursor:
        await cursor.execute(query, params)
        return await cursor.fetchall() if cursor.description else []


async def drop_schema(database_url: str, schema: str, wait: float = DROP_WAIT_SECONDS) -> bool:
    """Drop `schema` and everything in it (under its migration lock, so that no replica is
    creating it meanwhile); False when there was none. Waits up to `wait` seconds for the
    other replicas to close their pools on it first (they do when told of the deletion),
    so that none works on in a schema gone under it; then ends the connections left."""
    try:
        conn = await AsyncConnection.connect(
            database_url, autocommit=True, row_factory=dict_row, connect_timeout=10
        )
    except psycopg.Error as exc:
        raise RuntimeFailure(
            f"cannot connect to PostgreSQL at {_redacted(database_url)}: {exc}"
        ) from exc
    async with conn:
        await _until_unused(conn, schema, wait)
        async with migration_lock(conn, schema):
            found = await fetch_value(
                conn, "SELECT count(*) FROM pg_namespace WHERE nspname = %s", schema
            )
            await conn.execute(f"DROP SCHEMA IF EXISTS {quoted(schema)} CASCADE")
    return bool(found)


async def _until_unused(conn: AsyncConnection[DictRow], schema: str, wait: float) -> None:
    """Return once no other connection is on `schema`'s pools (their `application_name`);
    after `wait` seconds, end those left (a replica that missed the deletion)."""
    deadline = time.monotonic() + wait
    where = "FROM pg_stat_activity WHERE application_name = %s AND datname = current_database()"
    while left := await fetch_value(conn, f"SELECT count(*) {where}", schema):
        if time.monotonic() >= deadline:
            log.warning("schema %s: ending %d connections still open on it", schema, left)
            with contextlib.suppress(psycopg.Error):  # another role's: the drop waits on them
                await conn.execute(
                    f"SELECT pg_terminate_backend(pid) {where}",
                    (schema,),
                )
            return
        await asyncio.sleep(0.1)
