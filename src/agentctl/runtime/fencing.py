"""The check an agent makes before each model call and tool call (its subagents' too): that
the run's attempt still holds the run (storage/fence.py). A replica that wakes from a stall
past its lease calls no model and runs no tool for a run another replica took over.

A middleware rather than a callback: a callback handler would make langchain build run
managers for every step of every run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware

from agentctl.storage import fence


async def check() -> None:
    """Return when the attempt executing here (if any) still holds its run; else it stops
    (`StaleAttempt`)."""
    current = fence.current.get()
    if current is not None:
        await current.check()


class HoldsRun(AgentMiddleware):  # type: ignore[misc]
    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        await check()
        return await handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        await check()
        return await handler(request)
