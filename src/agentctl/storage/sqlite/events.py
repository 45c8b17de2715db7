"""The event log of the embedded database, with in-process fan-out to live subscribers.

Each thread's events carry ids `<ms>-<seq>` that only grow, as Redis stream ids do, so
`Last-Event-ID` means the same thing on every backend.
"""

from __future__ import annotations

import functools
import time
from collections import defaultdict

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
        check_fence(self.conn, fence)
        ms, seq = self._next_position(thread_id)
        self.db.defer(INSERT_EVENT, [(thread_id, ms, seq, run_id, event, data)])
        item = Event(f"{ms}-{seq}", run_id, event, data)
        for subscription in self._subscribers.get(thread_id, ()):
            subscription.queue.put_nowait(item)
        return item

    def _next_position(self, thread_id: str) -> tuple[int, int]:
        last = self._last.get(thread_id)
        if last is None:
            row = self.conn.execute(
                "SELECT ms, seq FROM events WHERE thread_id = ? ORDER BY ms DESC, seq DESC LIMIT 1",
                (thread_id,),
            ).fetchone()
            last = (row[0], row[1]) if row else (0, -1)
        ms = max(time.time_ns() // 1_000_000, last[0])
        position = (ms, last[1] + 1 if ms == last[0] else 0)
        self._last[thread_id] = position
        return position

    async def read(
        self, thread_id: str, *, after: str | None, run_id: str | None = None
    ) -> list[Event]:
        self.db.flush()
        ms, seq = event_position(after) if after else (-1, -1)
        query = (
            "SELECT ms, seq, run_id, event, data FROM events WHERE thread_id = ? "
            "AND (ms > ? OR (ms = ? AND seq > ?))"
        )
        params: list[object] = [thread_id, ms, ms, seq]
        if run_id is not None:
            query += " AND run_id = ?"
            params.append(run_id)
        rows = self.conn.execute(query + " ORDER BY ms, seq", params).fetchall()
        return [Event(f"{m}-{s}", rid, name, bytes(data)) for m, s, rid, name, data in rows]

    async def supersede(self, run_id: str, attempt: int) -> None:
        """Nothing to do: a fenced append reads the run's row."""

    async def last_id(self, thread_id: str) -> str | None:
        self.db.flush()
        row = self.conn.execute(
            "SELECT ms, seq FROM events WHERE thread_id = ? ORDER BY ms DESC, seq DESC LIMIT 1",
            (thread_id,),
        ).fetchone()
        return f"{row[0]}-{row[1]}" if row else None

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
