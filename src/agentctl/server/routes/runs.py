"""Runs: on a thread (background, stream, wait, list, get, delete, join, cancel) and
stateless (`thread_id: null`: a temporary thread, deleted when the run ends)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Header, Query, Request
from starlette.responses import Response

from agentctl.engine.wire import STREAM_MODES
from agentctl.errors import Conflict, NotFound, Unprocessable
from agentctl.server import lookup
from agentctl.server.access import caller_of
from agentctl.server.context import server_of
from agentctl.server.errors import not_found
from agentctl.server.fields import Limit, Offset
from agentctl.server.openapi import CONFLICT, NOT_FOUND, STARTS_RUN
from agentctl.server.routes.common import (
    checked_event_id,
    query_modes,
    query_names,
    select_fields,
)
from agentctl.server.run_requests import CancelMany, RunCreate
from agentctl.server.run_streams import (
    run_paths,
    run_stream_response,
    wait_for_result,
    waiting_response,
)
from agentctl.server.schemas import RUN_LIST, RunOut, TraceOut
from agentctl.server.services.runs import start_run
from agentctl.server.sse import EventStream
from agentctl.server.views import json_response, run_view
from agentctl.storage.base import ACTIVE_RUN_STATUSES, FINAL_RUN_STATUSES, Run, RunStatus

router = APIRouter(tags=["runs"])

# What `select` may name on a run list (the SDKs' `RunSelectField`, and `attempt`).
RUN_FIELDS = (
    "run_id", "thread_id", "assistant_id", "created_at", "updated_at", "status", "metadata",
    "kwargs", "multitask_strategy", "cancel_reason", "attempt", "usage",
)  # fmt: skip


def _created(run: Run) -> Response:
    _, content_location = run_paths(run)
    return json_response(run_view(run), headers={"Content-Location": content_location})


# -- runs on a thread --------------------------------------------------------------------


@router.post("/threads/{thread_id}/runs", response_model=RunOut, responses=STARTS_RUN)
async def create_run(thread_id: str, body: RunCreate, request: Request) -> Response:
    return _created(await start_run(server_of(request), caller_of(request), body, thread_id))


@router.post("/threads/{thread_id}/runs/stream", response_class=EventStream, responses=STARTS_RUN)
async def stream_run(thread_id: str, body: RunCreate, request: Request) -> Response:
    server = server_of(request)
    run = await start_run(server, caller_of(request), body, thread_id)
    return run_stream_response(server, run, cancel_on_disconnect=body.on_disconnect == "cancel")


@router.post("/threads/{thread_id}/runs/wait", response_model=Any, responses=STARTS_RUN)
async def wait_run(thread_id: str, body: RunCreate, request: Request) -> Response:
    server = server_of(request)
    run = await start_run(server, caller_of(request), body, thread_id, wait=True)
    cancel = body.on_disconnect == "cancel"
    result = wait_for_result(server, run, from_events=False, cancel_on_disconnect=cancel)
    return waiting_response(result, run, "join")


@router.get("/threads/{thread_id}/runs", response_model=RUN_LIST)
async def list_runs(
    thread_id: str,
    request: Request,
    limit: Annotated[Limit, Query()] = 10,
    offset: Annotated[Offset, Query()] = 0,
    status: RunStatus | None = None,
    select: Annotated[list[str] | None, Query()] = None,
) -> Response:
    fields = query_names("select", "field", select, RUN_FIELDS)
    server = server_of(request)
    await lookup.get_thread(server, thread_id, caller_of(request))
    runs = await server.storage.runs.list(thread_id, status=status, limit=limit, offset=offset)
    return json_response([select_fields(run_view(run), fields) for run in runs])


@router.get("/threads/{thread_id}/runs/{run_id}", response_model=RunOut)
async def get_run(thread_id: str, run_id: str, request: Request) -> Response:
    run = await lookup.get_run(server_of(request), thread_id, run_id, caller_of(request))
    return json_response(run_view(run))


@router.get("/threads/{thread_id}/runs/{run_id}/trace", response_model=TraceOut)
async def get_run_trace(thread_id: str, run_id: str, request: Request) -> Response:
    """The run's model calls, tool calls, subagents and MCP calls, with their durations and
    tokens: stored when the run ends (404 before)."""
    server = server_of(request)
    run = await lookup.get_run(server, thread_id, run_id, caller_of(request))
    trace = await server.storage.usage.trace(run.run_id)
    if trace is None:
        raise NotFound(
            f"run {run_id} has no trace yet — it is stored when the run ends ({run.status} now)"
            if run.status in ACTIVE_RUN_STATUSES
            else f"run {run_id} has no trace — it ended before traces were kept"
        )
    return json_response(trace)


@router.delete("/threads/{thread_id}/runs/{run_id}", status_code=204, responses=CONFLICT)
async def delete_run(thread_id: str, run_id: str, request: Request) -> Response:
    server = server_of(request)
    run = await lookup.get_run(server, thread_id, run_id, caller_of(request))
    if run.status in ACTIVE_RUN_STATUSES:
        raise Conflict(f"run {run_id} is {run.status} — cancel it before deleting it")
    await server.storage.runs.delete(run_id)
    return Response(status_code=204)


@router.get("/threads/{thread_id}/runs/{run_id}/join", response_model=Any)
async def join_run(thread_id: str, run_id: str, request: Request) -> Response:
    server = server_of(request)
    run = await lookup.get_run(server, thread_id, run_id, caller_of(request))
    return waiting_response(wait_for_result(server, run, from_events=False), run, "join")


@router.get("/threads/{thread_id}/runs/{run_id}/stream", response_class=EventStream)
async def join_run_stream(
    thread_id: str,
    run_id: str,
    request: Request,
    stream_mode: Annotated[list[str] | None, Query()] = None,
    cancel_on_disconnect: bool = False,
    last_event_id: Annotated[str | None, Header()] = None,
) -> Response:
    server = server_of(request)
    run = await lookup.get_run(server, thread_id, run_id, caller_of(request))
    return run_stream_response(
        server,
        run,
        last_event_id=checked_event_id(last_event_id),
        modes=query_modes(stream_mode, STREAM_MODES) or None,
        cancel_on_disconnect=cancel_on_disconnect,
    )


@router.post("/threads/{thread_id}/runs/{run_id}/cancel", response_model=Any)
async def cancel_run(
    thread_id: str,
    run_id: str,
    request: Request,
    wait: bool = False,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> Response:
    server = server_of(request)
    run = await lookup.get_run(server, thread_id, run_id, caller_of(request))
    if run.status in FINAL_RUN_STATUSES:
        # 404, as the reference answers: "no run to cancel" (the detail says why).
        raise NotFound(f"run {run_id} already ended ({run.status}) — nothing to cancel")
    # Answered once the run has stopped and recorded it: a read right after shows it ended.
    await server.engine.cancel_and_wait([run], action)
    if wait:
        return waiting_response(wait_for_result(server, run, from_events=True), run, "join")
    return Response(status_code=202)


# -- stateless runs ----------------------------------------------------------------------


@router.post("/runs", response_model=RunOut, responses=STARTS_RUN)
async def create_stateless_run(body: RunCreate, request: Request) -> Response:
    return _created(await start_run(server_of(request), caller_of(request), body, None))


@router.post("/runs/stream", response_class=EventStream, responses=STARTS_RUN)
async def stream_stateless_run(body: RunCreate, request: Request) -> Response:
    server = server_of(request)
    run = await start_run(server, caller_of(request), body, None)
    return run_stream_response(server, run, cancel_on_disconnect=body.on_disconnect == "cancel")


@router.post("/runs/wait", response_model=Any, responses=STARTS_RUN)
async def wait_stateless_run(body: RunCreate, request: Request) -> Response:
    server = server_of(request)
    run = await start_run(server, caller_of(request), body, None, wait=True)
    cancel = body.on_disconnect == "cancel"
    result = wait_for_result(server, run, from_events=run.temporary, cancel_on_disconnect=cancel)
    return waiting_response(result, run, "join")


@router.post("/runs/batch", response_model=list[RunOut], responses=STARTS_RUN)
async def create_batch(
    request: Request, body: Annotated[list[RunCreate], Body(max_length=100)]
) -> Response:
    server, caller = server_of(request), caller_of(request)
    runs = [await start_run(server, caller, item, None) for item in body]
    return json_response([run_view(run) for run in runs])


@router.post("/runs/cancel", status_code=204, responses=NOT_FOUND)
async def cancel_many(
    body: CancelMany,
    request: Request,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> Response:
    server, caller = server_of(request), caller_of(request)
    candidates: list[Run] = []
    if body.run_ids:
        for run_id in body.run_ids:
            run = await server.storage.runs.get(run_id)
            if (
                run is None
                or (body.thread_id and run.thread_id != body.thread_id)
                or not await lookup.owns_thread(server, run, caller)
            ):
                raise not_found("run", run_id)
            candidates.append(run)
    elif body.thread_id:
        await lookup.get_thread(server, body.thread_id, caller)
        candidates = await server.storage.runs.active(body.thread_id)
    elif body.status:
        candidates = [
            run
            for run in await server.storage.runs.all_active()
            if await lookup.owns_thread(server, run, caller)
        ]
    else:
        raise Unprocessable("say which runs to cancel: thread_id, run_ids or status")
    statuses: tuple[str, ...] = ACTIVE_RUN_STATUSES
    if body.status and body.status != "all":
        statuses = (body.status,)
    await server.engine.cancel_and_wait(
        [run for run in candidates if run.status in statuses], action
    )
    return Response(status_code=204)
