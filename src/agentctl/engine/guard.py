"""The check a run makes before each model call and tool call (its subagents' included):
that its attempt still holds the run (storage/fence.py). A replica that wakes from a stall
past its lease calls no model and runs no tool for a run another replica took over."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackHandler

from agentctl.storage.fence import Fence


class FenceGuard(AsyncCallbackHandler):  # type: ignore[misc]
    """A callback of the run's config, so every model and tool the run reaches calls it."""

    raise_error = True  # a refused check fails the call instead of being logged
    run_inline = True

    def __init__(self, fence: Fence) -> None:
        self.fence = fence

    async def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        await self.fence.check()

    async def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
        await self.fence.check()

    async def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
        await self.fence.check()
