"""Deleting an assistant, with what it scheduled and, when asked, the threads it ran on."""

from __future__ import annotations

from agentctl.server.context import Server
from agentctl.server.services.crons import delete_crons_where
from agentctl.server.services.threads import delete_threads_where


async def delete_assistant(server: Server, assistant_id: str, *, with_threads: bool) -> None:
    """Its runs in flight stop first (as the reference does), then what it scheduled goes,
    and with `with_threads` the threads its runs named (metadata.assistant_id)."""
    active = await server.storage.runs.all_active()
    await server.engine.cancel_and_wait([run for run in active if run.assistant_id == assistant_id])
    await delete_crons_where(server, assistant_id=assistant_id)
    if with_threads:
        await delete_threads_where(server, {"assistant_id": assistant_id})
    await server.storage.assistants.delete(assistant_id)
