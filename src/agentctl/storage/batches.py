"""Writes asked for while others are under way, sent together: one round trip for many callers.

A `GroupSender` queues each caller's item and, whenever no send is under way, sends all that
is queued in one go, in the order it was asked for: under load, the writes asked for during
one round trip go together in the next. Its `send` gets the batch and returns each item's
result, or the exception that item failed with. An outage of the service is waited out
(storage/outages.py) and the whole batch sent again, so `send` must be safe to repeat. An
item whose caller was cancelled meanwhile stays in the batch (`abandoned`): whether it still
goes out is the sender's to say.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from agentctl.errors import RuntimeFailure
from agentctl.storage.outages import ride_out

Item = TypeVar("Item")
Result = TypeVar("Result")


class Queued(Generic[Item, Result]):
    """An item waiting to be sent, and its caller's future."""

    __slots__ = ("future", "item")

    def __init__(self, item: Item, future: asyncio.Future[Result]) -> None:
        self.item = item
        self.future = future

    @property
    def abandoned(self) -> bool:
        """Whether its caller no longer waits for it (cancelled, e.g. a run rolled back)."""
        return self.future.done()


Send = Callable[[list[Queued[Item, Result]]], Awaitable[Sequence[Result | Exception]]]


class GroupSender(Generic[Item, Result]):
    """Sends items in batches through `send`, one batch at a time; `what` names an item in
    the error its caller gets when the sender is stopped before it was sent."""

    def __init__(self, send: Send[Item, Result], *, what: str) -> None:
        self._send = send
        self._what = what
        self._queued: list[Queued[Item, Result]] = []
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, item: Item) -> Result:
        """Send `item` with those asked for meanwhile; its result, or its failure raised."""
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._queued.append(Queued(item, future))
        if self._task is None:
            self._task = asyncio.create_task(self._send_queued())
        return await future

    async def close(self, timeout: float) -> None:
        """Let what is queued be sent for up to `timeout` seconds, then stop: the callers
        still waiting get a `RuntimeFailure`."""
        task = self._task
        if task is None:
            return
        await asyncio.wait({task}, timeout=timeout)
        task.cancel()
        await asyncio.wait({task})

    async def _send_queued(self) -> None:
        batch: list[Queued[Item, Result]] = []
        try:
            while self._queued:
                batch, self._queued = self._queued, []
                outcomes = await ride_out(functools.partial(self._send, batch))
                for queued, outcome in zip(batch, outcomes, strict=True):
                    if queued.abandoned:
                        continue
                    if isinstance(outcome, Exception):
                        queued.future.set_exception(outcome)
                    else:
                        queued.future.set_result(outcome)
        except Exception as exc:
            for queued in batch:
                if not queued.abandoned:
                    queued.future.set_exception(exc)
        finally:
            self._task = None
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # stopped: no caller may hang
                waiting, self._queued = batch + self._queued, []
                for queued in waiting:
                    if not queued.abandoned:
                        queued.future.set_exception(RuntimeFailure(f"{self._what} was cancelled"))
            elif self._queued:  # those queued since a failure above
                self._task = asyncio.create_task(self._send_queued())
