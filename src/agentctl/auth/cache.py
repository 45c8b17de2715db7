"""A small bounded TTL cache, a single-flight group and a shared fetch, for what providers say.

All are for one event loop: `TtlCache` is plain data; `SingleFlight` shares one in-flight call
per key between concurrent callers; `SharedFetch` keeps a fetched document (a key set, a
discovery document) and fetches it one call at a time.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Hashable
from typing import Any, Generic, TypeVar

from agentctl.errors import AuthUnavailable

__all__ = ["SharedFetch", "SingleFlight", "TtlCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    """At most `maxsize` entries, each with its own time to live; least recently used goes first."""

    def __init__(
        self, maxsize: int = 10_000, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self._clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        """The live value for `key`, or None (an expired entry is dropped)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if expires <= self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V, ttl: float) -> None:
        """Keep `value` for `ttl` seconds (a `ttl` of 0 or less keeps nothing)."""
        if ttl <= 0:
            self._entries.pop(key, None)
            return
        self._entries[key] = (self._clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()


class SingleFlight(Generic[K, V]):
    """Concurrent `do(key, call)` with the same key share one run of `call`.

    The shared call runs as a task, so one caller being cancelled does not cancel it for
    the others; its result (or exception) goes to every caller waiting at that moment.
    """

    def __init__(self) -> None:
        self._flights: dict[K, asyncio.Task[V]] = {}

    def __len__(self) -> int:
        return len(self._flights)

    async def do(self, key: K, call: Callable[[], Coroutine[Any, Any, V]]) -> V:
        task = self._flights.get(key)
        if task is None:
            task = asyncio.create_task(call())
            self._flights[key] = task
            task.add_done_callback(lambda done: self._landed(key, done))
        return await asyncio.shield(task)

    def _landed(self, key: K, task: asyncio.Task[V]) -> None:
        if self._flights.get(key) is task:
            del self._flights[key]
        if not task.cancelled():
            task.exception()  # retrieved, so an unawaited failure is not logged as lost

    async def aclose(self) -> None:
        """Cancel every call still in flight and wait for them to end."""
        tasks = list(self._flights.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._flights.clear()


class SharedFetch(Generic[V]):
    """The last value a fetch got, fetched one call at a time.

    A caller that waited while another fetch ran gets that fetch's outcome (its value, or
    `AuthUnavailable` with its message) instead of asking the provider again.
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.value: V | None = None  # the last value fetched, kept when a later fetch fails
        self.failure: str | None = None  # the message of the last fetch, if it failed
        self.ended = 0  # fetches that ended, in success or failure (not cancelled)
        self._clock = clock
        self._fetched_at = float("-inf")
        self._lock = asyncio.Lock()

    async def current(self, ttl: float, call: Callable[[], Awaitable[V]]) -> V:
        """The value kept, while younger than `ttl` seconds; else what `fetch` gets."""
        if self.value is not None and self._clock() - self._fetched_at < ttl:
            return self.value
        return await self.fetch(self.ended, call)

    async def fetch(self, seen: int, call: Callable[[], Awaitable[V]]) -> V:
        """What `call` returns, unless a fetch ended since the caller looked (`seen` is the
        number that had ended then): that one's outcome."""
        async with self._lock:
            if self.ended != seen:
                if self.failure is not None:
                    raise AuthUnavailable(self.failure)
                assert self.value is not None
                return self.value
            try:
                value = await call()
            except AuthUnavailable as exc:
                self.failure = str(exc)
                self.ended += 1  # callers that waited for this fetch share its outcome
                raise
            self.failure = None
            self.value = value
            self._fetched_at = self._clock()
            self.ended += 1
            return value
