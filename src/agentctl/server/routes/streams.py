"""The thread stream: one long-lived connection carrying every run on a thread."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from starlette.responses import Response

from agentctl.server import lookup
from agentctl.server.access import caller_of
from agentctl.server.context import server_of
from agentctl.server.routes.common import checked_event_id, query_modes
from agentctl.server.run_streams import thread_stream_response
from agentctl.server.sse import EventStream

router = APIRouter(tags=["threads"])

THREAD_STREAM_MODES = ("run_modes", "lifecycle", "state_update")


@router.get("/threads/{thread_id}/stream", response_class=EventStream)
async def join_thread_stream(
    thread_id: str,
    request: Request,
    stream_mode: Annotated[list[str] | None, Query()] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> Response:
    """Every event of every run on the thread from now on (or after `Last-Event-ID`;
    `-` replays from the start), and `metadata` `{"status": "run_done"}` as each run ends."""
    server, caller = server_of(request), caller_of(request)
    await lookup.get_thread(server, thread_id, caller)
    return thread_stream_response(
        server,
        caller,
        thread_id,
        last_event_id=checked_event_id(last_event_id),
        modes=set(query_modes(stream_mode, THREAD_STREAM_MODES)) or {"run_modes"},
    )
