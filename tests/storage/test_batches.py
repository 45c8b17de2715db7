"""Writes asked for while a send is under way go together in the next one; a failed batch
fails only its callers; a stopped sender leaves no caller waiting."""

from __future__ import annotations

import asyncio

import pytest

from agentctl.errors import RuntimeFailure
from agentctl.storage.batches import GroupSender, Queued


class Sender:
    """Sends by recording each batch; holds each batch until `gate` is set; fails the items
    named in `failing` with a ValueError, and a whole batch holding `"boom"` with a
    RuntimeError. `send` is the GroupSender on it."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.gate = asyncio.Event()
        self.failing: set[str] = set()
        self.send = GroupSender(self, what="the write")

    async def ask(self, *items: str) -> list[asyncio.Task[str]]:
        """Callers asking for `items`, each in a task, started before this returns."""
        tasks = [asyncio.create_task(self.send(item)) for item in items]
        await asyncio.sleep(0)
        return tasks

    async def __call__(self, batch: list[Queued[str, str]]) -> list[str | Exception]:
        items = [queued.item for queued in batch if not queued.abandoned]
        self.batches.append(items)
        await self.gate.wait()
        if "boom" in items:
            raise RuntimeError("the batch could not be sent")
        return [ValueError(q.item) if q.item in self.failing else q.item.upper() for q in batch]


async def test_items_asked_for_during_a_send_go_together_in_order() -> None:
    sender = Sender()
    first = await sender.ask("a")
    rest = await sender.ask("b", "c", "d")
    sender.gate.set()
    assert await asyncio.gather(*first, *rest) == ["A", "B", "C", "D"]
    assert sender.batches == [["a"], ["b", "c", "d"]]


async def test_one_failed_item_fails_only_its_caller() -> None:
    sender = Sender()
    sender.failing = {"b"}
    tasks = await sender.ask("a", "b", "c")
    sender.gate.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert (results[0], results[2]) == ("A", "C")
    assert isinstance(results[1], ValueError)
    assert str(results[1]) == "b"


async def test_a_failed_batch_fails_its_callers_and_what_came_after_is_still_sent() -> None:
    sender = Sender()
    failed = await sender.ask("x", "boom")
    (later,) = await sender.ask("y")
    sender.gate.set()
    for task in failed:
        with pytest.raises(RuntimeError, match="could not be sent"):
            await task
    assert await asyncio.wait_for(later, 5) == "Y"  # no further call needed to send it
    assert sender.batches == [["x", "boom"], ["y"]]


async def test_a_cancelled_caller_is_left_out_and_the_others_are_answered() -> None:
    sender = Sender()
    (first,) = await sender.ask("a")
    gone, kept = await sender.ask("b", "c")
    gone.cancel()
    sender.gate.set()
    assert (await first, await kept) == ("A", "C")
    assert sender.batches == [["a"], ["c"]]


async def test_closing_fails_the_callers_still_waiting() -> None:
    sender = Sender()
    waiting = await sender.ask("a", "b")
    await sender.send.close(timeout=0.05)
    for task in waiting:
        with pytest.raises(RuntimeFailure, match="the write was cancelled"):
            await task
    sender.gate.set()
    assert await sender.send("c") == "C"  # a closed sender starts again when asked to send
