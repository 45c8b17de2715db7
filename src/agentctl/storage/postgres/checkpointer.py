"""The langgraph PostgreSQL checkpointer and store on the server's pool, with the extras the
server needs (copy a thread, keep only its latest state, roll back a run's checkpoints).

The library keeps a checkpoint in `checkpoints` (inline primitive channel values), the other
channel values in `checkpoint_blobs` keyed by (thread, namespace, channel, version) and
shared by every checkpoint naming that version, and pending writes in `checkpoint_writes`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.store.postgres.aio import AsyncPostgresStore
from psycopg import AsyncCursor
from psycopg.errors import DivisionByZero
from psycopg.rows import DictRow, dict_row

from agentctl.storage.fence import current
from agentctl.storage.outages import ride_out
from agentctl.storage.postgres.database import Pool
from agentctl.storage.postgres.runs import SQL as RUNS
from agentctl.storage.sql.runs import fence_params

_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")

_UPSERT_BLOBS = """
    INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
    VALUES (%s, %s, %s, %s, %s, %s)
    ON CONFLICT (thread_id, checkpoint_ns, channel, version)
    DO UPDATE SET type = excluded.type, blob = excluded.blob
"""

# Blobs of the thread that no checkpoint left on it names any more.
_DELETE_UNUSED_BLOBS = """
    DELETE FROM checkpoint_blobs b WHERE b.thread_id = %(thread)s AND NOT EXISTS (
        SELECT 1 FROM checkpoints c
        WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns
        AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)
"""


T = TypeVar("T")
# Fails (division by zero) unless the attempt holds its run; locks the run's row.
_HOLDS = f"SELECT 1 / COUNT(*) FROM ({RUNS.holds} FOR SHARE) AS held"
# Set while the library saves a checkpoint or pending writes: the writes that are fenced.
_saving: ContextVar[bool] = ContextVar("agentctl_saving", default=False)


async def _saved(save: Callable[[], Awaitable[T]]) -> T:
    token = _saving.set(True)
    try:
        return await save()
    finally:
        _saving.reset(token)


class PoolPostgresSaver(AsyncPostgresSaver):  # type: ignore[misc]
    """`AsyncPostgresSaver` on a pool. Each call checks out a connection of its own, so calls
    run concurrently (the library serializes all of an instance's calls with one lock,
    which only a single shared connection needs). The writes of a run's attempt are fenced
    (storage/fence.py)."""

    def __init__(self, pool: Pool) -> None:
        super().__init__(pool)
        self.pool = pool

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        """The library's cursor: the checkpoints and pending writes it saves are made only
        while the attempt executing here (if any) holds its run."""
        fence = current.get() if _saving.get() else None
        async with self.pool.connection() as conn:
            if fence is not None:
                # One transaction with the check, sent in one pipeline as the unfenced
                # writes are: no round trip of its own. The check comes last and fails the
                # transaction when the attempt no longer holds its run; it locks the run's
                # row against a requeue until the commit.
                try:
                    async with conn.pipeline(), conn.transaction():
                        async with conn.cursor(binary=True, row_factory=dict_row) as cur:
                            yield cur
                        await conn.execute(_HOLDS, fence_params(fence))
                except DivisionByZero:
                    raise fence.refused() from None
            elif pipeline and self.supports_pipeline:
                async with conn.pipeline(), conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
            elif pipeline:
                async with (
                    conn.transaction(),
                    conn.cursor(binary=True, row_factory=dict_row) as cur,
                ):
                    yield cur
            else:
                async with conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        """Save a checkpoint. A `DeltaChannel` snapshot of a channel whose version is not
        new (the server snapshots delta channels into the latest checkpoint before pruning
        the rest) is stored under that version: the library would keep only its inline
        marker and lose the value. A snapshot at a version is that version's value, so the
        other checkpoints at that version read the same as before."""
        versions = checkpoint["channel_versions"]
        snapshots = {
            k: v
            for k, v in checkpoint["channel_values"].items()
            if isinstance(v, _DeltaSnapshot) and k not in new_versions and k in versions
        }

        async def put() -> Any:
            if snapshots:
                configurable = config["configurable"]
                rows = self._dump_blobs(
                    configurable["thread_id"],
                    configurable.get("checkpoint_ns", ""),
                    snapshots,
                    {k: versions[k] for k in snapshots},
                )
                async with self._cursor(pipeline=True) as cur:
                    await cur.executemany(_UPSERT_BLOBS, rows)
            return await super(PoolPostgresSaver, self).aput(
                config, checkpoint, metadata, new_versions
            )

        return await ride_out(lambda: _saved(put))

    async def aput_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Save a task's pending writes; both saves wait out an outage of the database (they
        are upserts: saving again what was saved is harmless), so a run goes on from the step
        it was at once the database is back."""
        await ride_out(lambda: _saved(lambda: super(PoolPostgresSaver, self).aput_writes(
            config, writes, task_id, task_path
        )))  # fmt: skip

    async def acopy_thread(self, source: str, target: str) -> None:
        """Copy every checkpoint, channel value and pending write of thread `source` to
        `target`."""
        async with self.pool.connection() as conn, conn.transaction():
            for table in _TABLES:
                cursor = await conn.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = current_schema() AND table_name = %s",
                    (table,),
                )
                columns = [row["column_name"] for row in await cursor.fetchall()]
                rest = ", ".join(f'"{c}"' for c in columns if c != "thread_id")
                await conn.execute(
                    f"INSERT INTO {table} (thread_id, {rest}) "
                    f"SELECT %s, {rest} FROM {table} WHERE thread_id = %s ON CONFLICT DO NOTHING",
                    (target, source),
                )

    async def aprune_to_latest(self, thread_id: str) -> None:
        """Keep only the newest checkpoint of each namespace of the thread."""
        await self._delete_checkpoints(
            thread_id,
            "checkpoint_id <> (SELECT MAX(checkpoint_id) FROM checkpoints l"
            " WHERE l.thread_id = %(thread)s AND l.checkpoint_ns = c.checkpoint_ns)",
            {},
        )

    async def adelete_for_run(self, thread_id: str, run_id: str) -> None:
        """Delete the checkpoints (and their writes) that run `run_id` wrote on the thread."""
        await self._delete_checkpoints(
            thread_id, "c.metadata ->> 'run_id' = %(run)s", {"run": run_id}
        )

    async def _delete_checkpoints(self, thread_id: str, where: str, params: dict[str, Any]) -> None:
        """Delete the thread's checkpoints matching `where` with their pending writes, and
        the channel values no checkpoint left uses."""
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(
                "WITH doomed AS (DELETE FROM checkpoints c WHERE c.thread_id = %(thread)s "
                f"AND {where} RETURNING checkpoint_ns, checkpoint_id) "
                "DELETE FROM checkpoint_writes w USING doomed d WHERE w.thread_id = %(thread)s "
                "AND w.checkpoint_ns = d.checkpoint_ns AND w.checkpoint_id = d.checkpoint_id",
                {"thread": thread_id, **params},
            )
            await conn.execute(_DELETE_UNUSED_BLOBS, {"thread": thread_id})


def pool_store(pool: Pool) -> Any:
    """The langgraph store (`BaseStore`) on the server's pool."""
    return AsyncPostgresStore(pool)
