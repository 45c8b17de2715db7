"""A small bounded TTL cache and a single-flight group, for validation results.

Both are for one event loop (no locks): `TtlCache` is plain data; `SingleFlight` shares one
in-flight call per key between concurrent callers.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["SingleFlight", "TtlCache"]

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
