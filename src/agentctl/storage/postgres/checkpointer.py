"""The langgraph PostgreSQL checkpointer and store on the server's pool, with the extras the
server needs (copy a thread, keep only its latest state, roll back a run's checkpoints).

The library keeps a checkpoint in `checkpoints` (inline primitive channel values), the other
channel values in `checkpoint_blobs` keyed by (thread, namespace, channel, version) and
shared by every checkpoint naming that version, and pending writes in `checkpoint_writes`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from langgraph.checkpoint.base import WRITES_IDX_MAP, get_serializable_checkpoint_metadata
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.store.postgres.aio import AsyncPostgresStore
from psycopg import AsyncConnection, AsyncCursor
from psycopg.errors import DivisionByZero
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb

from agentctl.storage.batches import GroupSender, Queued
from agentctl.storage.fence import Fence, StaleAttempt, current
from agentctl.storage.outages import service_down
from agentctl.storage.postgres.database import Pool
from agentctl.storage.postgres.runs import LOCK_ORDER
from agentctl.storage.postgres.runs import SQL as RUNS
from agentctl.storage.sql.runs import fence_params

_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")

# The first common table expression of a save: one row, or an error (division by zero) when
# the attempt executing here no longer holds its run, which it locks against a requeue until
# the save commits (storage/fence.py). Unfenced, one row.
_HELD = f"held AS MATERIALIZED (SELECT 1 / COUNT(*) AS ok FROM ({RUNS.holds} FOR SHARE) AS h)"
_UNFENCED = "held AS MATERIALIZED (SELECT 1 AS ok)"
# Before the saves of a batch, their runs' rows, share-locked in the order every statement
# locking several runs takes (postgres/runs.py), whatever the order of the saves.
_LOCK_RUNS = f"SELECT 1 FROM runs WHERE run_id = ANY(%s) ORDER BY {LOCK_ORDER} FOR SHARE"


def _blobs(name: str, conflict: str) -> str:
    return (
        f"{name} AS (INSERT INTO checkpoint_blobs"
        " (thread_id, checkpoint_ns, channel, version, type, blob)"
        " SELECT %s, %s, b.channel, b.version, b.type, b.blob FROM held, unnest(%s::text[],"
        " %s::text[], %s::text[], %s::bytea[]) AS b(channel, version, type, blob)"
        f" ON CONFLICT (thread_id, checkpoint_ns, channel, version) {conflict})"
    )


# A checkpoint in one statement, with the rows the library's `aput` writes: the channel
# values at new versions (kept when stored already), the delta snapshots at versions that
# are not new (see `aput`: replaced), then the checkpoint itself.
_PUT_CHECKPOINT = (
    "WITH {held}, "
    + _blobs("new_blobs", "DO NOTHING")
    + ", "
    + _blobs("snapshots", "DO UPDATE SET type = excluded.type, blob = excluded.blob")
    + " INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,"
    " checkpoint, metadata) SELECT %s, %s, %s, %s, %s, %s FROM held"
    " ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id)"
    " DO UPDATE SET checkpoint = excluded.checkpoint, metadata = excluded.metadata"
)
# A task's pending writes in one statement; as the library, the special channels' writes
# (errors, interrupts, ...) replace what was stored, the others keep it.
_PUT_WRITES = (
    "WITH {held} INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id,"
    " task_id, task_path, idx, channel, type, blob)"
    " SELECT %s, %s, %s, %s, %s, w.idx, w.channel, w.type, w.blob FROM held,"
    " unnest(%s::int4[], %s::text[], %s::text[], %s::bytea[]) AS w(idx, channel, type, blob)"
    " ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) {conflict}"
)
_REPLACE = "DO UPDATE SET channel = excluded.channel, type = excluded.type, blob = excluded.blob"
_STATEMENTS = {
    (what, fenced, conflict): sql.format(held=_HELD if fenced else _UNFENCED, conflict=conflict)
    for what, sql in (("checkpoint", _PUT_CHECKPOINT), ("writes", _PUT_WRITES))
    for fenced in (False, True)
    for conflict in (_REPLACE, "DO NOTHING")
}

# Blobs of the thread that no checkpoint left on it names any more.
_DELETE_UNUSED_BLOBS = """
    DELETE FROM checkpoint_blobs b WHERE b.thread_id = %(thread)s AND NOT EXISTS (
        SELECT 1 FROM checkpoints c
        WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns
        AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)
"""

Row = tuple[Any, ...]
# A save waiting to be sent: its statement, its parameters, the fence it carries (if any).
Save = tuple[str, Sequence[Any], Fence | None]


def _columns(rows: Sequence[Row], first: int) -> list[list[Any]]:
    """The columns of `rows` from index `first` on, as arrays for `unnest`."""
    return [list(column) for column in zip(*(row[first:] for row in rows), strict=True)] or [
        [] for _ in range(4)
    ]


class PoolPostgresSaver(AsyncPostgresSaver):  # type: ignore[misc]
    """`AsyncPostgresSaver` on a pool. Each call checks out a connection of its own, so calls
    run concurrently (the library serializes all of an instance's calls with one lock,
    which only a single shared connection needs). A checkpoint, or a task's pending writes,
    is saved in one statement (one round trip, one implicit transaction) that writes the
    library's rows and checks the fence of the attempt executing here, if any
    (storage/fence.py): a stale attempt's save writes nothing and raises `StaleAttempt`.

    Saves made while others are being sent go together, in one pipeline on one connection
    (one round trip, one transaction): a save sent alone costs its caller's loop more than
    twice as much CPU. When one of them fails (a stale attempt's), the batch is rolled back
    and each is sent again on its own, so that only that one fails."""

    def __init__(self, pool: Pool) -> None:
        super().__init__(pool)
        self.pool = pool
        self._saves: GroupSender[Save, None] = GroupSender(self._send, what="the checkpoint save")

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        """The library's cursor (for its reads and deletes), on a connection of the pool."""
        async with self.pool.connection() as conn:
            if pipeline and self.supports_pipeline:
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

    async def _save(self, what: str, conflict: str, params: Sequence[Any]) -> None:
        """Run one save statement, fenced by the attempt executing here (if any); wait out
        an outage of the database (saves are upserts: saving again what was saved is
        harmless), so a run goes on from the step it was at once the database is back."""
        fence = current.get()
        sql = _STATEMENTS[(what, fence is not None, conflict)]
        args = params if fence is None else (*fence_params(fence), *params)
        await self._saves((sql, args, fence))

    async def _send(self, batch: list[Queued[Save, None]]) -> list[Exception | None]:
        """Send `batch`; each save's failure, or None. Raises when the database cannot be
        reached (the whole batch is sent again: saving again what was saved is harmless).
        A save whose caller was cancelled meanwhile is not sent (e.g. a run rolled back)."""
        live = [queued.item for queued in batch if not queued.abandoned]
        async with self.pool.connection() as conn:
            if len(live) > 1:
                try:
                    async with conn.pipeline():
                        fenced = [fence.run_id for _, _, fence in live if fence is not None]
                        if fenced:
                            await conn.execute(_LOCK_RUNS, (fenced,))
                        for sql, args, _ in live:
                            await conn.execute(sql, args, binary=True)
                    return [None] * len(batch)
                except psycopg.Error as exc:
                    if service_down(exc):
                        raise
            return [
                None if queued.abandoned else await _send_one(conn, queued.item) for queued in batch
            ]

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        """Save a checkpoint as the library does, in one statement. A `DeltaChannel`
        snapshot of a channel whose version is not new (the server snapshots delta channels
        into the latest checkpoint before pruning the rest) is stored under that version:
        the library would keep only its inline marker and lose the value. A snapshot at a
        version is that version's value, so the other checkpoints at that version read the
        same as before."""
        configurable = config["configurable"]
        thread_id = configurable["thread_id"]
        checkpoint_ns = configurable["checkpoint_ns"]
        versions = checkpoint["channel_versions"]
        # As the library: primitive values inline in the checkpoint, the others (and delta
        # snapshots, marked inline with `True`) in blobs.
        inline = dict(checkpoint["channel_values"])
        blob_values: dict[str, Any] = {}
        for key, value in checkpoint["channel_values"].items():
            if isinstance(value, _DeltaSnapshot):
                blob_values[key] = inline.pop(key)
                inline[key] = True
            elif value is not None and not isinstance(value, str | int | float | bool):
                blob_values[key] = inline.pop(key)
        new = {k: v for k, v in new_versions.items() if k in blob_values}
        snapshots = {
            k: v
            for k, v in blob_values.items()
            if isinstance(v, _DeltaSnapshot) and k not in new_versions and k in versions
        }
        new_rows = self._dump_blobs(thread_id, checkpoint_ns, blob_values, new)
        snapshot_rows = self._dump_blobs(
            thread_id, checkpoint_ns, snapshots, {k: versions[k] for k in snapshots}
        )
        copy = {**checkpoint, "channel_values": inline}
        params = (
            thread_id, checkpoint_ns, *_columns(new_rows, 2),
            thread_id, checkpoint_ns, *_columns(snapshot_rows, 2),
            thread_id, checkpoint_ns, checkpoint["id"], configurable.get("checkpoint_id"),
            Jsonb(copy), Jsonb(get_serializable_checkpoint_metadata(config, metadata)),
        )  # fmt: skip
        await self._save("checkpoint", _REPLACE, params)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    async def aput_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Save a task's pending writes as the library does, in one statement."""
        if not writes:
            return  # as the library: nothing to save
        configurable = config["configurable"]
        replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        rows = self._dump_writes(
            configurable["thread_id"],
            configurable["checkpoint_ns"],
            configurable["checkpoint_id"],
            task_id,
            task_path,
            writes,
        )
        # One row per index, as the library's statement per write leaves it: the last
        # when replacing, else the first.
        unique: dict[int, Row] = {}
        for row in rows:
            if replace or row[5] not in unique:
                unique[row[5]] = row
        params = (
            configurable["thread_id"],
            configurable["checkpoint_ns"],
            configurable["checkpoint_id"],
            task_id,
            task_path,
            *_columns(list(unique.values()), 5),
        )
        await self._save("writes", _REPLACE if replace else "DO NOTHING", params)

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


async def _send_one(conn: AsyncConnection[Any], save: Save) -> Exception | None:
    """Send `save` alone; its failure, or None."""
    sql, args, fence = save
    try:
        await conn.execute(sql, args, binary=True)
    except DivisionByZero:
        assert fence is not None
        try:
            fence.refused()  # stops the attempt, and raises
        except StaleAttempt as refusal:
            return refusal
    except psycopg.Error as exc:
        if service_down(exc):
            raise
        return exc
    return None


def pool_store(pool: Pool) -> Any:
    """The langgraph store (`BaseStore`) on the server's pool."""
    return AsyncPostgresStore(pool)
