"""Following the event log: one run's events, or every run on a thread, from any point.

A follower subscribes before it reads what is stored, then skips live events it has
already sent, so an event appended in between is neither lost nor sent twice. What is
stored is read a page at a time, so a replay holds one page however long the thread; a
run's events are read from where the thread's log stood when the run was created
(`run_start`), not from the thread's first event. An outage of the log's service does not
end a follower: it sends heartbeats, reads again once the service is back (the outage is
logged once, storage/outages.py) and goes on from where it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Collection
from typing import Generic, TypeVar

from agentctl import serde
from agentctl.engine.wire import END_EVENT
from agentctl.observability import metrics
from agentctl.storage.base import Event, EventLog, Run, Storage, Subscription, event_position
from agentctl.storage.outages import REDIS, outages, ride_out, service_down

REPLAY_ALL = "-"
# A run's option set by the server when it is created: the id of the thread's last event
# then (none: the log was empty). The run's events all come after it.
LOG_START = "log_start"
# A replay reads the log a page at a time: at most PAGE_EVENTS events (the first pages
# fewer: a run's stream often ends within them), and none after the one that brings the
# page to PAGE_BYTES.
FIRST_PAGE, PAGE_EVENTS, PAGE_BYTES = 32, 512, 1024 * 1024

T = TypeVar("T")


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


def run_start(run: Run) -> str | None:
    """An event id before the first of `run`'s events (None: the log's start)."""
    start = run.kwargs.get(LOG_START)
    try:
        return start if isinstance(start, str) and event_position(start) else None
    except ValueError:
        return None


async def mark_start(storage: Storage, run: Run) -> None:
    """Note in `run`, before it is stored, where its events will begin: after the thread's
    last event now. Not while the log's service is down: its followers then read the
    thread from its start."""
    if outages.lately(REDIS, 0.0):  # known down: a run is not held up by asking it
        return
    try:
        start = await storage.events.last_id(run.thread_id)
    except Exception as exc:
        if service_down(exc) is None:
            raise
        return
    if start is not None:
        run.kwargs[LOG_START] = start


async def follow(
    storage: Storage,
    thread_id: str,
    *,
    run_id: str | None,
    last_event_id: str | None,
    start: str | None = None,
    live_only: bool = False,
    stored_only: bool = False,
    heartbeat: float = 5.0,
    stop: asyncio.Event | None = None,
) -> AsyncIterator[Event | None]:
    """Events of the thread (of `run_id` only, when given) after `last_event_id`
    (`-` or None: from the start — from after `start`, an id before the first event wanted,
    when given — unless `live_only`). Yields None when `heartbeat` seconds pass without an
    event. A run follower ends after the run's end marker; with `stored_only` (a run known
    to be over) it ends after what is stored; any follower ends once `stop` is set."""
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
            last: str | None = None
            if after:
                # Read before the log: an event appended in between is then read, not skipped.
                reading = _Patient(functools.partial(storage.events.last_id, thread_id))
                async with contextlib.aclosing(reading.wait(heartbeat)) as beats:
                    async for item in beats:
                        beat.saw_event()
                        yield item
                last = reading.result()
            found = False
            replay = _replay(storage.events, thread_id, after or start, heartbeat)
            async with contextlib.aclosing(replay):
                async for event in replay:
                    if stopped is not None and stopped.done():
                        return
                    if event is None:
                        beat.saw_event()
                        yield None
                        continue
                    if run_id is not None and event.run_id != run_id:
                        continue
                    found = True
                    position = event_position(event.id)
                    yield event
                    if run_id is not None and event.event == END_EVENT:
                        return
            if after and not found:
                # An id past the end of the log names no event (another server's, or made
                # up): go on from the end, not from the id, or every live event looks seen.
                position = min(position, event_position(last) if last else (-1, -1))
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


async def stored(
    storage: Storage, thread_id: str, *, run_id: str, start: str | None
) -> AsyncIterator[Event]:
    """The stored events of run `run_id` (from after `start`: `run_start`), up to its end
    marker, a page at a time."""
    replay = _replay(storage.events, thread_id, start, heartbeat=60.0)
    async with contextlib.aclosing(replay):
        async for event in replay:
            if event is not None and event.run_id == run_id:
                yield event
                if event.event == END_EVENT:
                    return


async def _replay(
    log: EventLog, thread_id: str, after: str | None, heartbeat: float
) -> AsyncGenerator[Event | None, None]:
    """The stored events of the thread after `after`, a page at a time, with None every
    `heartbeat` seconds a page takes (an outage: it is read again until the service is
    back)."""
    limit = FIRST_PAGE
    while True:
        read = functools.partial(
            log.page, thread_id, after=after, limit=limit, max_bytes=PAGE_BYTES
        )
        reading = _Patient(read)
        async with contextlib.aclosing(reading.wait(heartbeat)) as beats:
            async for item in beats:
                yield item
        page = reading.result()
        for event in page:
            yield event
        if not page or (len(page) < limit and sum(len(e.data) for e in page) < PAGE_BYTES):
            return  # the end of the log
        after = page[-1].id
        limit = min(4 * limit, PAGE_EVENTS)


class _Patient(Generic[T]):
    """A read of the event log done again through outages of its service (`ride_out`),
    waited for with a heartbeat (None) every `heartbeat` seconds it takes; closing `wait`
    early cancels it."""

    def __init__(self, read: Callable[[], Awaitable[T]]) -> None:
        self._task = asyncio.ensure_future(ride_out(read))

    async def wait(self, heartbeat: float) -> AsyncGenerator[None, None]:
        try:
            while not self._task.done():
                await asyncio.wait({self._task}, timeout=heartbeat)
                if not self._task.done():
                    yield None
        finally:
            if not self._task.done():
                self._task.cancel()

    def result(self) -> T:
        return self._task.result()


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
