"""Crons deleted with what they belong to: a thread, or an assistant."""

from __future__ import annotations

from agentctl.server.context import Server
from agentctl.storage.base import Page


async def delete_crons_where(
    server: Server, *, thread_id: str | None = None, assistant_id: str | None = None
) -> int:
    """Delete every cron of a thread or of an assistant (both deleted with them)."""
    if thread_id is None and assistant_id is None:
        raise ValueError("delete_crons_where needs a thread or an assistant")
    deleted = 0
    while True:
        found, _ = await server.storage.crons.search(
            assistant_id=assistant_id, thread_id=thread_id, enabled=None, metadata={},
            page=Page(limit=100),
        )  # fmt: skip
        if not found:
            return deleted
        for cron in found:
            deleted += await server.storage.crons.delete(cron.cron_id)
