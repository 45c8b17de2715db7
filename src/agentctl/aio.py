"""Small asyncio helpers any layer may use; this module imports nothing of agentctl."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

__all__ = ["stop_task"]


async def stop_task(task: asyncio.Future[Any] | None) -> None:
    """Cancel `task` (when there is one) and wait until it has ended; that it was cancelled
    is no error, anything else it raised is."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
