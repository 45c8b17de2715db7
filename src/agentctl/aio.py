"""Small asyncio helpers any layer may use; this module imports nothing of agentctl."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

__all__ = ["stop_task", "wait_all"]


async def stop_task(task: asyncio.Future[Any] | None) -> None:
    """Cancel `task` (when there is one) and wait until it has ended; that it was cancelled
    is no error, anything else it raised is."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def wait_all(
    tasks: list[asyncio.Task[Any]], timeout: float, unless: asyncio.Event | None = None
) -> None:
    """Wait until every task is done, `timeout` seconds passed, or `unless` is set; the
    tasks themselves go on."""
    if unless is None:
        await asyncio.wait(tasks, timeout=timeout)
        return
    waits = [asyncio.ensure_future(asyncio.wait(tasks)), asyncio.ensure_future(unless.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            await stop_task(wait)
