"""The event log of the embedded database, with in-process fan-out to live subscribers.

Each thread's events carry ids `<ms>-<seq>` that only grow, as Redis stream ids do, so
`Last-Event-ID` means the same thing on every backend.

Events are kept in their compact form (storage/compact.py: a token's metadata and a
`values` event's messages kept once per thread, in `event_parts`), each under its own id: a
replay reads exactly what was sent live. A `values` event is stored compact as it comes: it
repeats the whole conversation, which would otherwise be written in full each step, a cost
growing with the thread. So are a run's token events when `fold_after` is 0 (the default):
each token's ~1 KB of metadata is not written again and again, only to be folded away. With
a `fold_after` of N seconds they are stored as they come and folded N seconds after the
run's end; the folds to do are kept in `event_folds` with the run's end: those a stop, a
crash or a full disk left undone (and the runs of an older version) are done after the next
start.

Token events (`messages`, dozens a second from each streaming run) wait in memory a little
(`TokenStage`) before they go to the table. The table keeps each thread's events together,
so a commit writes a page of it for every thread that added a row: a commit of every 50 ms
rewrote each streaming run's page some 20 times a second for a few hundred bytes of tokens,
two thirds of what the database wrote under load. A thread's tokens go to the table once they
fill about a page, after `STAGE_SECONDS`, or before the next event of its that is not a token
(and before any read), so what is stored is always the beginning of the thread's stream: a
crash loses at most the last second of tokens of the model calls under way, which the retried
run makes again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable

from agentctl.storage import compact
from agentctl.storage.base import Event, event_position
from agentctl.storage.fence import Fence
from agentctl.storage.sqlite.database import ROOM_TO_RESUME, Database
from agentctl.storage.sqlite.runs import check_fence
from agentctl.storage.subscription import QueueSubscription

# Appended events reach the table with the next commit (`Database.defer`): live subscribers
# get them at once, and reads flush them first.
INSERT_EVENT = (
    "INSERT INTO events (thread_id, ms, seq, run_id, event, data) VALUES (?, ?, ?, ?, ?, ?)"
)


SELECT_AFTER = (
    "SELECT ms, seq, run_id, event, data FROM events WHERE thread_id = ? AND (ms, seq) > (?, ?)"
)
SELECT_LAST = "SELECT ms, seq FROM events WHERE thread_id = ? ORDER BY ms DESC, seq DESC LIMIT 1"
SELECT_RUN = (
    "SELECT ms, seq, event, data FROM events WHERE thread_id = ? AND (ms, seq) >= (?, ?)"
    " AND (ms, seq) <= (?, ?) AND run_id = ?"
)
UPDATE_DATA = "UPDATE events SET data = ? WHERE thread_id = ? AND ms = ? AND seq = ?"
INSERT_FOLD = "INSERT OR REPLACE INTO event_folds VALUES (?, ?, ?, ?, ?, ?)"
DELETE_FOLD = "DELETE FROM event_folds WHERE run_id = ?"
SELECT_FOLDS = "SELECT thread_id, run_id, first_ms, first_seq, end_ms, end_seq FROM event_folds"
INSERT_PART = "INSERT OR IGNORE INTO event_parts (thread_id, digest, data) VALUES (?, ?, ?)"
SELECT_PARTS = "SELECT digest, data FROM event_parts WHERE thread_id = ? AND digest IN ({})"
END_EVENT = "__end__"  # engine/wire.py's end marker: the run's events are all there
LEFTOVER_PAUSE = 0.05  # between the folds left from before this process started
STAGE_SECONDS = 1.0  # the longest a token event waits in memory
STAGE_BYTES = 3500  # a thread's tokens waiting that fill about a page (4 KiB) go at once
ROW_BYTES = 100  # what a row adds to its data: its thread, run, ids and event name
log = logging.getLogger("agentctl.storage")


class TokenStage:
    """Each thread's token events not yet handed to the database (see the module's text)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._rows: dict[str, list[tuple[object, ...]]] = {}
        self._bytes: dict[str, int] = {}
        self._timer: asyncio.TimerHandle | None = None

    def add(self, thread_id: str, row: tuple[object, ...], size: int) -> None:
        self._rows.setdefault(thread_id, []).append(row)
        self._bytes[thread_id] = waiting = self._bytes.get(thread_id, 0) + size + ROW_BYTES
        if waiting >= STAGE_BYTES:
            self.release(thread_id)
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(STAGE_SECONDS, self._expire)

    def release(self, thread_id: str) -> None:
        """Hand the thread's waiting tokens to the database, to go with its next commit."""
        rows = self._rows.pop(thread_id, None)
        self._bytes.pop(thread_id, None)
        if rows:
            self.db.defer(INSERT_EVENT, rows)

    def release_all(self) -> None:
        for thread_id in list(self._rows):
            self.release(thread_id)

    def drop(self, thread_id: str) -> None:
        self._rows.pop(thread_id, None)
        self._bytes.pop(thread_id, None)

    def _expire(self) -> None:
        self._timer = None
        try:
            self.release_all()
        except Exception as exc:  # the database refused earlier writes (told once, here)
            log.error("token events were not stored: %s", exc)


def _events(rows: Iterable[tuple[int, int, str, str, bytes]]) -> list[Event]:
    return [Event(f"{ms}-{seq}", run_id, name, bytes(data)) for ms, seq, run_id, name, data in rows]


class SqliteEventLog:
    def __init__(self, db: Database, *, fold_after: float | None = 30.0) -> None:
        self.db = db
        self.conn = db.conn
        self.fold_after = fold_after  # None: events stay as they were appended
        self._last: dict[str, tuple[int, int]] = {}
        self._subscribers: defaultdict[str, set[QueueSubscription]] = defaultdict(set)
        self._first: dict[str, tuple[int, int]] = {}  # each running run's first event
        self._parts = compact.PartCache()
        self._heads: compact.Heads[compact.Head] = compact.Heads()
        # Folds waiting for their retention window, by run: when, and the fold itself.
        self._pending: dict[str, tuple[asyncio.TimerHandle, Callable[[], None]]] = {}
        self._leftovers: list[tuple[str, str, int, int, int, int]] = []
        self._tokens = TokenStage(db)
        with contextlib.suppress(RuntimeError):  # opened on the loop: done in its background
            asyncio.get_running_loop().call_soon(self._fold_leftovers)

    async def append(
        self, thread_id: str, run_id: str, event: str, data: bytes, *, fence: Fence | None = None
    ) -> Event:
        # Checked inline, when the write is decided: nothing can take the run over in between
        # (the rows may reach the table later: no other process writes this database).
        check_fence(self.db, fence)
        ms, seq = self._next_position(thread_id)
        stored = data
        if self.fold_after is not None:
            base = event.split("|", 1)[0]
            if base == "values" or (base == "messages" and self.fold_after == 0):
                stored = self._compacted(thread_id, event, data)
        row = (thread_id, ms, seq, run_id, event, stored)
        if event.startswith("messages"):
            self._tokens.add(thread_id, row, len(stored))
        else:
            self._tokens.release(thread_id)  # stored in order: a crash loses only a suffix
            self.db.defer(INSERT_EVENT, [row])
        item = Event(f"{ms}-{seq}", run_id, event, data)
        for subscription in self._subscribers.get(thread_id, ()):
            subscription.queue.put_nowait(item)
        if event == END_EVENT:
            # Its first event may be another process's (a run resumed after a restart).
            first = self._first.pop(run_id, (0, 0))
            if self.fold_after:  # (0: its events were stored compact as they came)
                self.db.defer(INSERT_FOLD, [(run_id, thread_id, *first, ms, seq)])
                self._fold_later(thread_id, run_id, first, (ms, seq))
        elif run_id not in self._first:
            self._first[run_id] = (ms, seq)
        return item

    def _compacted(self, thread_id: str, event: str, data: bytes) -> bytes:
        """The compact form of `data` (itself when it has none), the parts the thread does
        not hold yet deferred with it: those of the thread's previous such event, and those
        this process stored or read lately, are not written again."""
        encoded = compact.encode_after(event, data, self._heads.get(thread_id, event))
        if encoded is None:
            self._heads.keep(thread_id, event, None)
            return data
        stored, parts, head = encoded  # (a token's head is None: only `values` have one)
        self._heads.keep(thread_id, event, head)
        _, new = self._parts.split(thread_id, parts)
        if new:
            self.db.defer(INSERT_PART, [(thread_id, key, parts[key]) for key in new])
            self._parts.keep(thread_id, {key: parts[key] for key in new})
        return stored

    def _fold_later(
        self, thread_id: str, run_id: str, first: tuple[int, int], end: tuple[int, int]
    ) -> None:
        def fold() -> None:
            self._pending.pop(run_id, None)
            try:
                self.fold(thread_id, run_id, first, end)
            except Exception as exc:  # kept as they are: they read the same
                log.warning("the events of run %s were not folded: %s", run_id, exc)

        loop = asyncio.get_running_loop()
        self._pending[run_id] = (loop.call_later(self.fold_after or 0.0, fold), fold)

    def _fold_leftovers(self) -> None:
        """Fold, one at a time in the background, the runs an earlier process left unfolded
        (those ending now wait for their retention window)."""
        if self.fold_after is None:
            return
        try:
            self.db.flush()
            self._leftovers = self.conn.execute(SELECT_FOLDS).fetchall()
        except Exception as exc:  # e.g. a full disk: they stay as they are until a later start
            log.warning("the folds left from before this start were not looked up: %s", exc)
            return
        loop = asyncio.get_running_loop()

        def next_one() -> None:
            while self._leftovers:
                thread_id, run_id, first_ms, first_seq, end_ms, end_seq = self._leftovers.pop()
                if run_id in self._pending:
                    continue
                try:
                    self.fold(thread_id, run_id, (first_ms, first_seq), (end_ms, end_seq))
                except Exception as exc:  # kept as they are: they read the same
                    log.warning("the events of run %s were not folded: %s", run_id, exc)
                loop.call_later(LEFTOVER_PAUSE, next_one)
                return

        loop.call_soon(next_one)

    def close(self) -> None:
        """Fold now what waits for its retention window (no one follows it any more)."""
        self._tokens.release_all()
        pending, self._pending = self._pending, {}
        for handle, fold in pending.values():
            handle.cancel()
            fold()

    def fold(
        self, thread_id: str, run_id: str, first: tuple[int, int], end: tuple[int, int]
    ) -> int:
        """Store the events of run `run_id` (from `first` to `end`) in their compact form;
        returns how many were folded. A disk short of room (or out) folds nothing: the
        events read the same either way, and a fold must never be what fills the disk."""
        disk = self.db.disk
        if disk.outage is not None:
            return 0
        self._tokens.release(thread_id)
        self.db.flush()
        rows = self.conn.execute(SELECT_RUN, (thread_id, *first, *end, run_id)).fetchall()
        if disk.free_bytes() < ROOM_TO_RESUME + sum(len(row[3]) for row in rows):
            return 0
        updates: list[tuple[bytes, str, int, int]] = []
        parts: compact.Parts = {}
        for ms, seq, name, data in rows:
            encoded = compact.encode(name, bytes(data))
            if encoded is not None:
                updates.append((encoded[0], thread_id, ms, seq))
                parts.update(encoded[1])
        with self.db.transaction():
            self.conn.executemany(
                INSERT_PART, [(thread_id, key, part) for key, part in parts.items()]
            )
            self.conn.executemany(UPDATE_DATA, updates)
            self.conn.execute(DELETE_FOLD, (run_id,))
        return len(updates)

    def _expanded(self, thread_id: str, events: list[Event]) -> list[Event]:
        """`events` as they were sent: compact ones filled with their parts."""
        wanted = compact.all_needed(event.data for event in events)
        if not wanted:
            return events
        found, missing = self._parts.split(thread_id, wanted)
        read: dict[str, bytes] = {}
        for start in range(0, len(missing), 500):
            batch = missing[start : start + 500]
            query = SELECT_PARTS.format(",".join("?" * len(batch)))
            for key, part in self.conn.execute(query, (thread_id, *batch)):
                read[key] = bytes(part)
        self._parts.keep(thread_id, read)
        found.update(read)
        return [
            Event(e.id, e.run_id, e.event, compact.decode(e.data, found))
            if compact.compacted(e.data)
            else e
            for e in events
        ]

    def _next_position(self, thread_id: str) -> tuple[int, int]:
        last = self._last.get(thread_id)
        if last is None:
            row = self.conn.execute(SELECT_LAST, (thread_id,)).fetchone()
            last = (row[0], row[1]) if row else (0, -1)
        ms = max(time.time_ns() // 1_000_000, last[0])
        position = (ms, last[1] + 1 if ms == last[0] else 0)
        self._last[thread_id] = position
        return position

    async def read(
        self, thread_id: str, *, after: str | None, run_id: str | None = None
    ) -> list[Event]:
        self._tokens.release(thread_id)
        self.db.flush()
        query = SELECT_AFTER
        params: list[object] = [thread_id, *(event_position(after) if after else (-1, -1))]
        if run_id is not None:
            query += " AND run_id = ?"
            params.append(run_id)
        events = _events(self.conn.execute(query + " ORDER BY ms, seq", params))
        return self._expanded(thread_id, events)

    async def page(
        self, thread_id: str, *, after: str | None, limit: int, max_bytes: int
    ) -> list[Event]:
        self._tokens.release(thread_id)
        self.db.flush()
        position = event_position(after) if after else (-1, -1)
        query = SELECT_AFTER + " ORDER BY ms, seq LIMIT ?"
        page: list[Event] = []
        size = 0
        for ms, seq, run_id, name, data in self.conn.execute(query, (thread_id, *position, limit)):
            page.append(Event(f"{ms}-{seq}", run_id, name, bytes(data)))
            size += len(data)
            if size >= max_bytes:
                break
        return compact.bounded(self._expanded(thread_id, page), max_bytes)

    async def supersede(self, run_id: str, attempt: int) -> None:
        """Nothing to do: a fenced append reads the run's row."""

    async def last_id(self, thread_id: str) -> str | None:
        # The last append of this process (its row may still wait for the next commit), or
        # the last row stored: no other process writes this database.
        last = self._last.get(thread_id)
        if last is None:
            row = self.conn.execute(SELECT_LAST, (thread_id,)).fetchone()
            last = (row[0], row[1]) if row else None
        return f"{last[0]}-{last[1]}" if last is not None else None

    def subscribe(self, thread_id: str) -> QueueSubscription:
        subscription = QueueSubscription(functools.partial(self._unsubscribe, thread_id))
        self._subscribers[thread_id].add(subscription)
        return subscription

    def _unsubscribe(self, thread_id: str, subscription: QueueSubscription) -> None:
        subscribers = self._subscribers.get(thread_id)
        if subscribers is not None:
            subscribers.discard(subscription)
            if not subscribers:
                del self._subscribers[thread_id]

    async def delete(self, thread_id: str) -> None:
        self._tokens.drop(thread_id)
        with self.db.transaction():
            self.conn.execute("DELETE FROM events WHERE thread_id = ?", (thread_id,))
            self.conn.execute("DELETE FROM event_parts WHERE thread_id = ?", (thread_id,))
            self.conn.execute("DELETE FROM event_folds WHERE thread_id = ?", (thread_id,))
        self._last.pop(thread_id, None)
        self._parts.forget(thread_id)
        self._heads.forget(thread_id)
