"""The thread-centric stream protocol: commands, and the events as SSE or on a WebSocket
(see `agentctl.server.protocol`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request, WebSocket
from starlette.responses import Response, StreamingResponse

from agentctl import serde
from agentctl.errors import BadRequest
from agentctl.server import lookup
from agentctl.server.access import Caller, caller_of
from agentctl.server.context import Server, server_of
from agentctl.server.protocol.commands import Commands, error, malformed
from agentctl.server.protocol.filters import parse_filter, parse_since
from agentctl.server.protocol.socket import SocketSession
from agentctl.server.protocol.stream import agent_deleted, thread_events
from agentctl.server.sse import HEARTBEAT, frame, stream_headers
from agentctl.server.views import json_response

router = APIRouter(tags=["thread streams"])


async def _json_body(request: Request) -> Any:
    try:
        return serde.loads(await request.body())
    except ValueError:
        raise BadRequest("the body must be JSON") from None


@router.post("/threads/{thread_id}/commands")
async def thread_command(thread_id: str, request: Request) -> Response:
    """One protocol command (`{"id", "method", "params"}`) on the thread; the answer is
    `{"type": "success" | "error", "id", …}`."""
    message = await _json_body(request)
    problem = malformed(message)
    if problem is not None:
        command_id = message.get("id") if isinstance(message, dict) else None
        return json_response(error(command_id, "invalid_argument", problem), 400)
    commands = Commands(server_of(request), caller_of(request), thread_id)
    return json_response(await commands.handle(message))


@router.post("/threads/{thread_id}/stream/events")
async def thread_events_stream(thread_id: str, request: Request) -> Response:
    """The thread's events (`{channels, namespaces?, depth?, since?}`) as server-sent events,
    from the start of the thread (after `since`), then live, until the client hangs up."""
    body = await _json_body(request)
    event_filter = parse_filter(body)  # FilterError: 400
    since = parse_since(body)
    server, caller = server_of(request), caller_of(request)
    await lookup.get_thread(server, thread_id, caller)
    return StreamingResponse(
        _frames(server, caller, thread_id, event_filter.matches, since),
        media_type="text/event-stream; charset=utf-8",
        headers=stream_headers(None, None),
    )


async def _frames(
    server: Server, caller: Caller, thread_id: str, wanted: Any, since: int | None
) -> AsyncIterator[bytes]:
    async for event in thread_events(server, caller, thread_id, wanted, since):
        if event is None:
            yield HEARTBEAT
        else:
            yield frame(event["method"], serde.dumps(event), str(event["seq"]))
    if server.deleted.is_set():  # said, so that the client does not reconnect
        yield frame("error", serde.dumps(agent_deleted(server)))


@router.websocket("/threads/{thread_id}/stream/events")
async def thread_socket(thread_id: str, websocket: WebSocket) -> None:
    """Commands and events on one socket; a refusal closes it with 4000 + the HTTP status.
    The thread may not exist yet (a `run.start` on the socket creates it); its events are
    only sent once it does, to its owner."""
    await websocket.accept()
    caller = websocket.scope.get("state", {}).get("caller")
    if not isinstance(caller, Caller):  # `Authentication` did not run: no one is let in
        await websocket.close(code=4401, reason="the request was not authenticated")
        return
    await SocketSession(websocket.app.state.server, caller, thread_id, websocket).serve()
