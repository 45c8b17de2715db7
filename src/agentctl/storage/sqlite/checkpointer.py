"""The langgraph SQLite checkpointer and store, driven inline on the event loop.

The library's async variants hand every call to a thread and commit each write with a full
sync; on the embedded database that overhead is most of a one-turn run's storage cost. These
subclasses call the library's synchronous code directly (see `database.py` for why that is
safe here) and share the server's connection. Checkpoints and writes are appended with the
next commit (`Database.defer`), many in one statement; every read flushes them first.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.base import WRITES_IDX_MAP, get_checkpoint_metadata
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.sqlite import SqliteStore

from agentctl.storage.fence import current
from agentctl.storage.sql.dialect import json_value
from agentctl.storage.sqlite.database import Database, Disk, disk_error
from agentctl.storage.sqlite.runs import check_fence

_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id"
PUT_CHECKPOINT = (
    f"INSERT OR REPLACE INTO checkpoints ({_COLUMNS}, parent_checkpoint_id, type, checkpoint, "
    "metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_WRITES = (
    f"INTO writes ({_COLUMNS}, task_id, task_path, idx, channel, type, value) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# As the library: special channels (errors, interrupts, ...) replace, the others keep the first.
REPLACE_WRITES = f"INSERT OR REPLACE {_WRITES}"
KEEP_WRITES = f"INSERT OR IGNORE {_WRITES}"


class LoopSqliteSaver(SqliteSaver):  # type: ignore[misc]
    def __init__(self, db: Database) -> None:
        super().__init__(db.conn)
        self.db = db
        self.lock = db.lock  # the server's tables share the connection: one lock for both

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        """The library's writes join the server's batched transactions (see `Database`)."""
        self.setup()
        self.db.flush()
        cur = self.conn.cursor()
        try:
            if transaction:
                with self.db.transaction():
                    yield cur
            else:
                with self.lock:
                    yield cur
        finally:
            cur.close()

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        """The library's row, appended with the next commit."""
        configurable = config["configurable"]
        thread_id, checkpoint_ns = str(configurable["thread_id"]), configurable["checkpoint_ns"]
        type_, serialized = self.serde.dumps_typed(checkpoint)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False)
        row = (
            thread_id,
            checkpoint_ns,
            checkpoint["id"],
            configurable.get("checkpoint_id"),
            type_,
            serialized,
            meta.encode("utf-8", "ignore"),
        )
        check_fence(self.db, current.get())
        self.db.defer(PUT_CHECKPOINT, [row])
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def put_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """The library's rows, appended with the next commit."""
        configurable = config["configurable"]
        key = (
            str(configurable["thread_id"]),
            str(configurable["checkpoint_ns"]),
            str(configurable["checkpoint_id"]),
        )
        statement = REPLACE_WRITES if all(w[0] in WRITES_IDX_MAP for w in writes) else KEEP_WRITES
        rows = []
        for index, (channel, value) in enumerate(writes):
            type_, blob = self.serde.dumps_typed(value)
            position = WRITES_IDX_MAP.get(channel, index)
            rows.append((*key, task_id, task_path, position, channel, type_, blob))
        check_fence(self.db, current.get())
        self.db.defer(statement, rows)

    async def aget_tuple(self, config: Any) -> Any:
        return self.get_tuple(config)

    async def alist(
        self,
        config: Any,
        *,
        filter: dict[str, Any] | None = None,
        before: Any = None,
        limit: int | None = None,
    ) -> AsyncIterator[Any]:
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def aget_delta_channel_history(
        self, *, config: Any, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        history: Mapping[str, Any] = self.get_delta_channel_history(
            config=config, channels=channels
        )
        return history

    async def acopy_thread(self, source: str, target: str) -> None:
        """Copy every checkpoint and pending write of thread `source` to `target`."""
        with self.cursor() as cur:
            for table in ("checkpoints", "writes"):
                columns = [row[1] for row in cur.execute(f"PRAGMA table_info({table})")]
                rest = ", ".join(c for c in columns if c != "thread_id")
                cur.execute(
                    f"INSERT OR REPLACE INTO {table} (thread_id, {rest}) "
                    f"SELECT ?, {rest} FROM {table} WHERE thread_id = ?",
                    (target, source),
                )

    async def adelete_for_run(self, thread_id: str, run_id: str) -> None:
        """Delete the checkpoints (and their writes) that run `run_id` wrote on the thread."""
        doomed = [
            item.config["configurable"]["checkpoint_id"]
            for item in self.list({"configurable": {"thread_id": thread_id}})
            if item.metadata.get("run_id") == run_id
        ]
        with self.cursor() as cur:
            for table in ("checkpoints", "writes"):
                cur.executemany(
                    f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_id = ?",
                    [(thread_id, checkpoint_id) for checkpoint_id in doomed],
                )

    async def aprune_to_latest(self, thread_id: str) -> None:
        """Keep only the newest checkpoint of each namespace of the thread."""
        with self.cursor() as cur:
            cur.execute(
                "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id NOT IN ("
                " SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ?"
                " GROUP BY checkpoint_ns)",
                (thread_id, thread_id),
            )
            cur.execute(
                "DELETE FROM writes WHERE thread_id = ? AND checkpoint_id NOT IN ("
                " SELECT checkpoint_id FROM checkpoints WHERE thread_id = ?)",
                (thread_id, thread_id),
            )


class LoopSqliteStore(SqliteStore):  # type: ignore[misc]
    """The library's store, with reads answered from memory until the next write.

    Every run reads the agent's skills and instructions (a search and a get), which cost a
    quarter of a millisecond each in SQLite. This process is the only writer of the
    embedded database, so a write here is the only thing that can make a read stale: any
    write empties the cache. Results are shared, as `InMemoryStore` shares its items.

    An item written again keeps its `created_at`, as on PostgreSQL (the library's SQLite
    store replaces the row, and with it the time it was created).

    Each write commits at once (the library's own transaction). On `disk`, a write is
    refused while the disk takes none, and one the disk refuses begins that outage; either
    raises `DiskUnavailable`."""

    CACHE_SIZE = 256  # reads kept; past it the cache starts again
    CACHE_ITEMS = 50  # a read answering more items than this is not kept

    def __init__(self, conn: sqlite3.Connection, disk: Disk | None = None) -> None:
        super().__init__(conn, deserializer=json_value)  # as our tables are read
        self.disk = disk
        self._reads: dict[str, Any] = {}
        self._writes = 0  # writes ended: a read racing one is not kept
        self._reads_lock = threading.Lock()

    def batch(self, ops: Iterable[Any]) -> list[Any]:
        ops = list(ops)
        keys = [_read_key(op) for op in ops]
        if None in keys:  # a write
            if self.disk is not None:
                self.disk.check()
            try:
                created = self._created_at(ops)
                results = list(super().batch(ops))
                if created:
                    with self._cursor() as cur:
                        cur.executemany(
                            "UPDATE store SET created_at = ? WHERE prefix = ? AND key = ?", created
                        )
                return results
            except sqlite3.Error as exc:
                # The library commits in a `finally`: the disk's error may be the context of
                # the one its COMMIT raised after SQLite rolled the transaction back.
                cause = exc if disk_error(exc) else exc.__context__
                if self.disk is not None and cause is not None and disk_error(cause):
                    raise self.disk.fail(cause) from exc
                raise
            finally:
                with self._reads_lock:
                    self._writes += 1
                    self._reads.clear()
        with self._reads_lock:
            results = [self._reads.get(key, _MISSING) for key in keys]  # type: ignore[arg-type]
            writes = self._writes
        missing = [i for i, result in enumerate(results) if result is _MISSING]
        if missing:
            fetched = super().batch([ops[i] for i in missing])
            with self._reads_lock:
                keep = writes == self._writes  # no write ended while these were read
                if keep and len(self._reads) + len(missing) > self.CACHE_SIZE:
                    self._reads.clear()
                for i, result in zip(missing, fetched, strict=True):
                    results[i] = result
                    if keep and not (isinstance(result, list) and len(result) > self.CACHE_ITEMS):
                        self._reads[keys[i]] = result  # type: ignore[index]
        return [list(r) if isinstance(r, list) else r for r in results]

    async def abatch(self, ops: Iterable[Any]) -> list[Any]:
        return self.batch(ops)

    def _created_at(self, ops: list[Any]) -> list[tuple[Any, str, str]]:
        """(created_at, prefix, key) of the stored items that `ops` write again."""
        puts = {(".".join(op.namespace), op.key) for op in ops
                if isinstance(op, PutOp) and op.value is not None}  # fmt: skip
        found: list[tuple[Any, str, str]] = []
        with self._cursor(transaction=False) as cur:
            for prefix, key in puts:
                cur.execute(
                    "SELECT created_at FROM store WHERE prefix = ? AND key = ?", (prefix, key)
                )
                row = cur.fetchone()
                if row is not None:
                    found.append((row[0], prefix, key))
        return found


_MISSING = object()


def _read_key(op: Any) -> str | None:
    """What identifies a read's result (None for a write): the operation's repr, which
    names its type and every field."""
    return repr(op) if isinstance(op, GetOp | SearchOp | ListNamespacesOp) else None
