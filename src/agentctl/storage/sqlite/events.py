"""The event log of the embedded database, with in-process fan-out to live subscribers.

Each thread's events carry ids `<ms>-<seq>` that only grow, as Redis stream ids do, so
`Last-Event-ID` means the same thing on every backend.
"""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from collections.abc import Iterable

from agentctl.storage.base import Event, event_position
from agentctl.storage.fence import Fence
from agentctl.storage.sqlite.database import Database
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


def _events(rows: Iterable[tuple[int, int, str, str, bytes]]) -> list[Event]:
    return [Event(f"{ms}-{seq}", run_id, name, bytes(data)) for ms, seq, run_id, name, data in rows]


class SqliteEventLog:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn
        self._last: dict[str, tuple[int, int]] = {}
        self._subscribers: defaultdict[str, set[QueueSubscription]] = defaultdict(set)

    async def append(
        self, thread_id: str, run_id: str, event: str, data: bytes, *, fence: Fence | None = None
    ) -> Event:
        # Checked and deferred inline: nothing can take the run over in between.
        check_fence(self.db, fence)
        ms, seq = self._next_position(thread_id)
        self.db.defer(INSERT_EVENT, [(thread_id, ms, seq, run_id, event, data)])
        item = Event(f"{ms}-{seq}", run_id, event, data)
        for subscription in self._subscribers.get(thread_id, ()):
            subscription.queue.put_nowait(item)
        return item

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
        self.db.flush()
        query = SELECT_AFTER
        params: list[object] = [thread_id, *(event_position(after) if after else (-1, -1))]
        if run_id is not None:
            query += " AND run_id = ?"
            params.append(run_id)
        return _events(self.conn.execute(query + " ORDER BY ms, seq", params))

    async def page(
        self, thread_id: str, *, after: str | None, limit: int, max_bytes: int
    ) -> list[Event]:
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
        return page

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
        with self.db.transaction():
            self.conn.execute("DELETE FROM events WHERE thread_id = ?", (thread_id,))
        self._last.pop(thread_id, None)
