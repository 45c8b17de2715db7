"""Following the event log: one run's events, or every run on a thread, from any point.

A follower subscribes before it reads what is stored, then skips live events it has
already sent, so an event appended in between is neither lost nor sent twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection

from agentctl import serde
from agentctl.engine.wire import END_EVENT
from agentctl.observability import metrics
from agentctl.storage.base import Event, Storage, Subscription, event_position

REPLAY_ALL = "-"


def _base_mode(event: str) -> str:
    return event.split("|", 1)[0]


def wanted(event: Event, modes: Collection[str] | None) -> bool:
    """Whether a run-stream follower asking for `modes` (None: all) gets `event`."""
    if modes is None or event.event in ("metadata", "error"):
        return True
    base = _base_mode(event.event)
    if base == "messages" or base.startswith("messages/"):
        return "messages-tuple" in modes or "messages" in modes
    return base in modes


async def follow(
    storage: Storage,
    thread_id: str,
    *,
    run_id: str | None,
    last_event_id: str | None,
    live_only: bool = False,
    stored_only: bool = False,
    heartbeat: float = 5.0,
    stop: asyncio.Event | None = None,
) -> AsyncIterator[Event | None]:
    """Events of the thread (of `run_id` only, when given) after `last_event_id`
    (`-` or None: from the start, unless `live_only`). Yields None when `heartbeat` seconds
    pass without an event. A run follower ends after the run's end marker; with
    `stored_only` (a run known to be over) it ends after what is stored; any follower ends
    once `stop` is set."""
    subscription = storage.events.subscribe(thread_id)
    subscriber = metrics.stream_opened()
    beat = _Heartbeat(subscription, heartbeat)
    stopped = asyncio.ensure_future(stop.wait()) if stop is not None else None
    if stopped is not None:
        stopped.add_done_callback(lambda _: subscription.wake())
    try:
        after = None if last_event_id in (None, REPLAY_ALL) else last_event_id
        position = event_position(after) if after else (-1, -1)
        if not (live_only and last_event_id is None):
            # Read before the log: an event appended in between is then read, not skipped.
            last = await storage.events.last_id(thread_id) if after else None
            stored = await storage.events.read(thread_id, after=after, run_id=run_id)
            if after and not stored:
                # An id past the end of the log names no event (another server's, or made
                # up): go on from the end, not from the id, or every live event looks seen.
                position = min(position, event_position(last) if last else (-1, -1))
            for event in stored:
                position = event_position(event.id)
                yield event
                if run_id is not None and event.event == END_EVENT:
                    return
        if stored_only:
            return
        while True:
            live = await subscription.next()
            if stopped is not None and stopped.done():
                return
            if live is None:
                if beat.due():
                    yield None
                continue
            beat.saw_event()
            if run_id is not None and live.run_id != run_id:
                continue
            current = event_position(live.id)
            if current <= position:
                continue
            position = current
            yield live
            if run_id is not None and live.event == END_EVENT:
                return
    finally:
        beat.cancel()
        if stopped is not None:
            stopped.cancel()
        subscription.close()
        metrics.stream_closed(subscriber)


class _Heartbeat:
    """Wakes a follower (`Subscription.wake`) when `interval` seconds pass without a live
    event: one timer per follower, moved on as it fires, not one per event."""

    def __init__(self, subscription: Subscription, interval: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._subscription = subscription
        self._interval = interval
        self._last = self._loop.time()  # the last event, or heartbeat
        self._handle = self._loop.call_later(interval, self._fire)

    def saw_event(self) -> None:
        self._last = self._loop.time()

    def due(self) -> bool:
        """Whether a heartbeat is due (else the follower was woken for another reason);
        counts it as sent."""
        if self._loop.time() - self._last < self._interval:
            return False
        self._last = self._loop.time()
        return True

    def cancel(self) -> None:
        self._handle.cancel()

    def _fire(self) -> None:
        quiet = self._loop.time() - self._last
        if quiet >= self._interval:
            self._subscription.wake()
            quiet = 0.0
        self._handle = self._loop.call_later(self._interval - quiet, self._fire)


def run_done(event: Event) -> bytes:
    """The thread stream's `metadata` event for a run's end marker."""
    payload = serde.loads(event.data)
    return serde.dumps({"status": "run_done", "run_id": payload["run_id"]})
