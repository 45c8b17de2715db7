"""A live subscription to one thread's events, as every event log hands them out."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from agentctl.storage.base import Event


class QueueSubscription:
    """Live events put in its queue by the event log, from `subscribe` until `close`, which
    calls `detach` (the log's way to stop putting events in it)."""

    def __init__(self, detach: Callable[[QueueSubscription], None]) -> None:
        self._detach = detach
        self.queue: asyncio.Queue[Event | None] = asyncio.Queue()

    async def next(self) -> Event | None:
        return await self.queue.get()

    def wake(self) -> None:
        self.queue.put_nowait(None)

    def close(self) -> None:
        self._detach(self)
