"""Following a thread as protocol events: the whole log projected from its start, then live,
filtered for one subscriber and cut at its `since` cursor."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from agentctl.engine.streams import follow
from agentctl.server import lookup
from agentctl.server.access import Caller
from agentctl.server.app import Server
from agentctl.server.protocol.projection import ThreadProjection

HEARTBEAT_SECONDS = 5.0


async def thread_events(
    server: Server,
    caller: Caller,
    thread_id: str,
    wanted: Callable[[dict[str, Any]], bool],
    since: int | None,
) -> AsyncIterator[dict[str, Any] | None]:
    """The thread's protocol events after `since` that `wanted` accepts, for as long as the
    caller reads, the thread stays theirs, and the server runs; None when a heartbeat is due."""
    projection = ThreadProjection(server.deployment.graph_id)
    runs: set[str] = set()
    async for stored in follow(
        server.storage,
        thread_id,
        run_id=None,
        last_event_id=None,
        heartbeat=HEARTBEAT_SECONDS,
        stop=server.stopping,
    ):
        if stored is None:
            yield None
            continue
        if stored.run_id not in runs:
            if not await lookup.still_visible(server, thread_id, caller):
                return  # deleted (and perhaps made again by someone else)
            runs.add(stored.run_id)
        for event in projection.project(stored):
            if (since is None or event["seq"] > since) and wanted(event):
                yield event
