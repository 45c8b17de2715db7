"""Following a thread as protocol events: the whole log projected from its start, then live,
filtered for one subscriber and cut at its `since` cursor."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from agentctl.server.access import Caller
from agentctl.server.context import Server
from agentctl.server.protocol.commands import error
from agentctl.server.protocol.projection import ThreadProjection
from agentctl.server.run_streams import deletion_error, follow_thread


async def thread_events(
    server: Server,
    caller: Caller,
    thread_id: str,
    wanted: Callable[[dict[str, Any]], bool],
    since: int | None,
) -> AsyncIterator[dict[str, Any] | None]:
    """The thread's protocol events after `since` that `wanted` accepts, for as long as the
    caller reads, the thread stays theirs, and the server runs (`server.deleted` tells
    whether it ended because the agent was deleted); None when a heartbeat is due."""
    projection = ThreadProjection(server.deployment.graph_id)
    async for stored in follow_thread(
        server, caller, thread_id, last_event_id=None, live_only=False
    ):
        if stored is None:
            yield None
            continue
        for event in projection.project(stored):
            if (since is None or event["seq"] > since) and wanted(event):
                yield event


def agent_deleted(server: Server) -> dict[str, Any]:
    """The error frame (`{"type": "error", "id": null, …}`) that ends a thread's stream when
    its agent is deleted."""
    return error(None, "no_such_agent", deletion_error(server)["message"])
