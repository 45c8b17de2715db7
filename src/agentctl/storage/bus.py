"""The in-process bus: the one process of an embedded (SQLite) server signals itself."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict

from agentctl.storage.base import Handler, Message

log = logging.getLogger("agentctl.storage")


async def deliver(handler: Handler, topic: str, message: Message) -> None:
    """Call one handler; its failure is logged, never propagated to the publisher."""
    try:
        await handler(message)
    except Exception:
        log.exception("a handler of bus topic %r failed", topic)


class LocalBus:
    def __init__(self) -> None:
        self._handlers: defaultdict[str, list[Handler]] = defaultdict(list)
        self._tasks: set[asyncio.Task[None]] = set()
        self._members: dict[str, tuple[float, Message]] = {}  # member: (expiry, state)

    async def publish(self, topic: str, message: Message) -> None:
        for handler in self._handlers.get(topic, ()):
            task = asyncio.create_task(deliver(handler, topic, message))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def subscribe(self, topic: str, handler: Handler) -> None:
        self._handlers[topic].append(handler)

    async def ready(self, topic: str) -> bool:
        return True

    async def announce(self, member: str, state: Message, ttl: float) -> None:
        self._members[member] = (time.monotonic() + ttl, state)

    async def members(self) -> dict[str, Message]:
        now = time.monotonic()
        self._members = {m: entry for m, entry in self._members.items() if entry[0] > now}
        return {member: state for member, (_, state) in self._members.items()}

    async def withdraw(self, member: str) -> None:
        self._members.pop(member, None)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
