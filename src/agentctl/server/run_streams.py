"""Responses that follow runs: SSE streams, and the long `wait`/`join` responses.

Both keep idle connections alive (an SSE heartbeat comment, or a newline before the JSON
body, as the reference server sends) and never hold the response back until the run ends.
When the agent is deleted they end at once with an `error` saying so (`AgentDeleted`): a
client told nothing would wait, or reconnect, for ever.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Collection
from typing import Any

from starlette.responses import StreamingResponse

from agentctl import serde
from agentctl.engine.streams import follow, run_done, run_start, wanted
from agentctl.engine.wire import END_EVENT
from agentctl.server import lookup
from agentctl.server.access import Caller
from agentctl.server.connections import CutShort
from agentctl.server.context import Server
from agentctl.server.services.state import STATE_UPDATE_EVENT
from agentctl.server.sse import HEARTBEAT, frame, stream_headers
from agentctl.storage.base import FINAL_RUN_STATUSES, Event, Run

KEEPALIVE_SECONDS = 5.0
DELETED_ERROR = "AgentDeleted"  # the `error` of a stream whose agent was deleted


def run_paths(run: Run) -> tuple[str, str]:
    """(`Location` of the run's stream, `Content-Location` of the run)."""
    run_path = f"/threads/{run.thread_id}/runs/{run.run_id}"
    return f"{run_path}/stream", run_path


def run_stream_response(
    server: Server,
    run: Run,
    *,
    last_event_id: str | None = None,
    modes: Collection[str] | None = None,
    cancel_on_disconnect: bool = False,
) -> StreamingResponse:
    location, content_location = run_paths(run)
    return StreamingResponse(
        _run_frames(server, run, last_event_id, modes, cancel_on_disconnect),
        media_type="text/event-stream; charset=utf-8",
        headers=stream_headers(location, content_location),
    )


def deletion_error(server: Server) -> dict[str, str]:
    """The `error` event of a stream ended by its agent's deletion."""
    return {
        "error": DELETED_ERROR,
        "message": f"agent {server.agent_name!r} was deleted from the platform: its runs "
        "were stopped and its threads are gone",
    }


def _follow_run(server: Server, run: Run, last_event_id: str | None) -> AsyncIterator[Event | None]:
    """The run's events after `last_event_id` (None: from the start), heartbeats as None,
    until the run ends, its agent is deleted, or the server stopped and handed it back."""
    return follow(
        server.storage,
        run.thread_id,
        run_id=run.run_id,
        last_event_id=last_event_id,
        start=run_start(run),
        stored_only=run.status in FINAL_RUN_STATUSES,
        heartbeat=KEEPALIVE_SECONDS,
        stop=server.runs_left,
    )


async def _run_frames(
    server: Server,
    run: Run,
    last_event_id: str | None,
    modes: Collection[str] | None,
    cancel_on_disconnect: bool,
) -> AsyncIterator[bytes]:
    ended = False
    try:
        async for event in _follow_run(server, run, last_event_id):
            if event is None:
                yield HEARTBEAT
            elif event.event == END_EVENT:
                ended = True
                yield frame("end", event.data, event.id)
            elif wanted(event, modes):
                yield frame(event.event, event.data, event.id)
        if not ended and server.deleted.is_set():
            yield frame("error", serde.dumps(deletion_error(server)))
        ended = True
    finally:
        if not ended and cancel_on_disconnect:
            _cancel_later(server, run)


def _cancel_later(server: Server, run: Run) -> None:
    """Cancel `run` from a response that is itself being cancelled (by its client: one
    ended by the server's stop leaves the run to resume)."""
    if server.stopping.is_set():
        return

    async def cancel() -> None:
        current = await server.storage.runs.get(run.run_id)
        if current is not None and current.status not in FINAL_RUN_STATUSES:
            await server.engine.cancel(current)

    task = asyncio.get_running_loop().create_task(cancel())
    _background.add(task)
    task.add_done_callback(_background.discard)


_background: set[asyncio.Task[None]] = set()


def thread_stream_response(
    server: Server,
    caller: Caller,
    thread_id: str,
    *,
    last_event_id: str | None,
    modes: Collection[str],
) -> StreamingResponse:
    return StreamingResponse(
        _thread_frames(server, caller, thread_id, last_event_id, modes),
        media_type="text/event-stream; charset=utf-8",
        headers=stream_headers(None, None),
    )


async def follow_thread(
    server: Server, caller: Caller, thread_id: str, *, last_event_id: str | None, live_only: bool
) -> AsyncIterator[Event | None]:
    """Every run's events on the thread (heartbeats as None), for as long as the thread is
    there and the caller's — checked at each new run, as it may have been deleted and its id
    taken by someone else — and the server runs."""
    runs: set[str] = set()
    async for event in follow(
        server.storage,
        thread_id,
        run_id=None,
        last_event_id=last_event_id,
        live_only=live_only,
        heartbeat=KEEPALIVE_SECONDS,
        stop=server.stopping,
    ):
        if event is not None and event.run_id not in runs:
            if not await lookup.still_visible(server, thread_id, caller):
                return
            runs.add(event.run_id)
        yield event


async def _thread_frames(
    server: Server,
    caller: Caller,
    thread_id: str,
    last_event_id: str | None,
    modes: Collection[str],
) -> AsyncIterator[bytes]:
    async for event in follow_thread(
        server, caller, thread_id, last_event_id=last_event_id, live_only=True
    ):
        if event is None:
            yield HEARTBEAT
        elif event.event == END_EVENT:
            if "run_modes" in modes or "lifecycle" in modes:
                yield frame("metadata", run_done(event), event.id)
        elif event.event == STATE_UPDATE_EVENT:
            if "state_update" in modes:
                yield frame(event.event, event.data, event.id)
        elif "run_modes" in modes or ("lifecycle" in modes and event.event == "metadata"):
            yield frame(event.event, event.data, event.id)
    if server.deleted.is_set():
        yield frame("error", serde.dumps(deletion_error(server)))


def waiting_response(
    body: AsyncIterator[bytes], run: Run, location_suffix: str
) -> StreamingResponse:
    """A JSON response preceded by keep-alive newlines while the run goes on."""
    _, content_location = run_paths(run)
    return StreamingResponse(
        body,
        media_type="application/json",
        headers={
            "Location": f"{content_location}/{location_suffix}",
            "Content-Location": content_location,
        },
    )


async def wait_for_result(
    server: Server, run: Run, *, from_events: bool, cancel_on_disconnect: bool = False
) -> AsyncIterator[bytes]:
    """Newlines until `run` ends, then its result: the final values (with `__interrupt__`
    when it paused), or `{"__error__": ...}` when it failed.

    `from_events`: take the values from the run's `values` events (for a stateless run,
    whose thread is gone when it ends) instead of the thread's state.
    `cancel_on_disconnect`: a client gone before the run ended cancels it."""
    answered = False
    try:
        async with contextlib.aclosing(_result(server, run, from_events=from_events)) as chunks:
            async for chunk in chunks:
                yield chunk
        answered = True
    finally:
        if not answered and cancel_on_disconnect:
            _cancel_later(server, run)


async def _result(server: Server, run: Run, *, from_events: bool) -> AsyncGenerator[bytes, None]:
    """`wait_for_result`'s newlines and result."""
    values: Any = None
    interrupts: list[Any] = []
    error: Any = None
    ended = False
    async for event in _follow_run(server, run, None):
        if event is None:
            yield b"\n"
        elif event.event == END_EVENT:
            ended = True
        elif event.event == "error":
            error = serde.loads(event.data)
        elif event.event == "values" and from_events:
            chunk = serde.loads(event.data)
            if isinstance(chunk, dict) and "__interrupt__" in chunk:
                interrupts = chunk["__interrupt__"]
            else:
                values = chunk
    if not ended and server.deleted.is_set():
        error = deletion_error(server)
    elif not ended and server.runs_left.is_set() and run.status not in FINAL_RUN_STATUSES:
        # Handed back by the server's stop: the client (the SDK) reconnects to `Location`,
        # the run's join, and waits there for its end. (A run that ended long ago, whose
        # events have expired, answers from the thread's state.)
        raise CutShort
    if error is not None:
        yield serde.dumps({"__error__": error})
        return
    if not from_events:
        values, interrupts = await thread_values(server, run.thread_id)
    if interrupts and isinstance(values, dict):
        values = {**values, "__interrupt__": interrupts}
    yield serde.dumps(values)


async def thread_values(server: Server, thread_id: str) -> tuple[Any, list[Any]]:
    """The thread's latest values and pending interrupts, as JSON-ready data."""
    state = await server.deployment.runtime.graph.aget_state(
        {"configurable": {"thread_id": thread_id}}
    )
    interrupts = [i for task in state.tasks for i in task.interrupts]
    return state.values, interrupts
