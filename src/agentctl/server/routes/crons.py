"""Crons: runs submitted on a schedule, on a thread or each on a new thread."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Request
from starlette.responses import Response

from agentctl.engine import crons as schedule
from agentctl.engine.wire import STREAM_MODES
from agentctl.server import lookup, views
from agentctl.server.access import Caller, caller_of, without_owner
from agentctl.server.app import Server, server_of
from agentctl.server.errors import ApiError, not_found
from agentctl.server.fields import Config, Metadata, StreamModes
from agentctl.server.routes.common import Body, Limit, Offset, SortOrder, page, select_fields
from agentctl.server.schemas import CRON_LIST, CronOut
from agentctl.storage.base import Cron, Page, new_id, now
from agentctl.storage.sorts import CronSort

router = APIRouter(tags=["crons"])

Interrupts = Literal["*"] | list[str]
# Request fields kept in the cron's payload and given to each run.
PAYLOAD_FIELDS = ("input", "metadata", "multitask_strategy", *schedule.RUN_FIELDS)


class CronFields(Body):
    input: Any = None
    metadata: Metadata | None = None
    config: Config | None = None
    context: dict[str, Any] | None = None
    interrupt_before: Interrupts | None = None
    interrupt_after: Interrupts | None = None
    webhook: str | None = None
    on_run_completed: Literal["delete", "keep"] | None = None
    end_time: datetime | None = None
    enabled: bool | None = None
    timezone: str | None = None
    stream_mode: StreamModes | None = None
    stream_subgraphs: bool | None = None
    stream_resumable: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None


class CronCreate(CronFields):
    schedule: str
    assistant_id: str
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] | None = None


class CronPatch(CronFields):
    schedule: str | None = None


class CronCount(Body):
    assistant_id: str | None = None
    thread_id: str | None = None
    metadata: Metadata | None = None


class CronSearch(CronCount):
    enabled: bool | None = None
    limit: Limit = 10
    offset: Offset = 0
    sort_by: CronSort | None = None
    sort_order: SortOrder | None = None
    select: list[str] | None = None


async def _check(body: CronFields, schedule_text: str | None) -> None:
    try:
        if schedule_text is not None:
            schedule.check_schedule(schedule_text)
        await schedule.load_timezone(body.timezone)
    except ValueError as exc:
        raise ApiError(422, str(exc)) from None
    modes = [body.stream_mode] if isinstance(body.stream_mode, str) else body.stream_mode or []
    for mode in modes:
        if mode not in STREAM_MODES:
            raise ApiError(
                422, f"stream_mode {mode!r} is not supported — use one of {', '.join(STREAM_MODES)}"
            )


async def _create(
    server: Server, caller: Caller, body: CronCreate, thread_id: str | None
) -> Response:
    await _check(body, body.schedule)
    assistant = await lookup.get_assistant(server, body.assistant_id)
    if thread_id is not None:
        await lookup.get_thread(server, thread_id, caller)
    metadata = caller.stamp(body.metadata)
    payload = {k: v for k in PAYLOAD_FIELDS if (v := getattr(body, k, None)) is not None}
    if "metadata" in payload:  # the runs it fires carry the cron's metadata, owner included
        payload["metadata"] = metadata
    cron = Cron(
        cron_id=new_id(),
        assistant_id=assistant.assistant_id,
        thread_id=thread_id,
        schedule=body.schedule,
        payload=payload,
        next_run_date=None,
        timezone=body.timezone,
        end_time=schedule.as_utc(body.end_time, body.timezone),
        on_run_completed=None if thread_id else body.on_run_completed or "delete",
        metadata=metadata,
        enabled=body.enabled is not False,
        user_id=caller.user,
    )
    if cron.enabled:
        schedule.schedule_next(cron, now())
    await server.storage.crons.create(cron)
    server.scheduler.wake()
    return views.json_response(views.cron_view(cron))


@router.post("/runs/crons", response_model=CronOut)
async def create_cron(request: Request, body: CronCreate) -> Response:
    return await _create(server_of(request), caller_of(request), body, None)


@router.post("/threads/{thread_id}/runs/crons", response_model=CronOut)
async def create_thread_cron(request: Request, thread_id: str, body: CronCreate) -> Response:
    return await _create(server_of(request), caller_of(request), body, thread_id)


async def _search(
    server: Server, caller: Caller, body: CronCount, enabled: bool | None, page_: Page
) -> tuple[list[Cron], int]:
    assistant_id = body.assistant_id and lookup.assistant_key(server, body.assistant_id)
    metadata = caller.narrow(body.metadata)
    if metadata is None:
        return [], 0
    return await server.storage.crons.search(
        assistant_id=assistant_id or None,
        thread_id=body.thread_id,
        enabled=enabled,
        metadata=metadata,
        page=page_,
    )


@router.post("/runs/crons/search", response_model=CRON_LIST)
async def search_crons(request: Request, body: CronSearch | None = None) -> Response:
    body = body or CronSearch()
    found, total = await _search(
        server_of(request),
        caller_of(request),
        body,
        body.enabled,
        page(body.limit, body.offset, body.sort_by, body.sort_order),
    )
    return views.json_response(
        [select_fields(views.cron_view(cron), body.select) for cron in found],
        headers=views.page_headers(body.offset, body.limit, len(found), total),
    )


@router.post("/runs/crons/count", response_model=int)
async def count_crons(request: Request, body: CronCount | None = None) -> Response:
    _, total = await _search(
        server_of(request), caller_of(request), body or CronCount(), None, Page(limit=1)
    )
    return views.json_response(total)


async def _get(server: Server, cron_id: str, request: Request) -> Cron:
    cron = await server.storage.crons.get(cron_id)
    if cron is None or not caller_of(request).owns(cron.metadata):
        raise not_found("cron", cron_id)
    return cron


@router.get("/runs/crons/{cron_id}", response_model=CronOut)
async def get_cron(request: Request, cron_id: str) -> Response:
    return views.json_response(views.cron_view(await _get(server_of(request), cron_id, request)))


@router.patch("/runs/crons/{cron_id}", response_model=CronOut)
async def patch_cron(request: Request, cron_id: str, body: CronPatch) -> Response:
    server = server_of(request)
    cron = await _get(server, cron_id, request)
    given = body.model_fields_set
    await _check(body, body.schedule)
    if body.schedule is not None:
        cron.schedule = body.schedule
    if "timezone" in given:
        cron.timezone = body.timezone
    if "end_time" in given:
        cron.end_time = schedule.as_utc(body.end_time, cron.timezone)
    if body.enabled is not None:
        cron.enabled = body.enabled
    if body.on_run_completed is not None and cron.thread_id is None:
        cron.on_run_completed = body.on_run_completed
    if body.metadata is not None:
        cron.metadata = {**cron.metadata, **without_owner(body.metadata)}
    payload = dict(cron.payload)
    for name in PAYLOAD_FIELDS:
        if name in given:
            payload.pop(name, None)
            value = cron.metadata if name == "metadata" else getattr(body, name)
            if value is not None:
                payload[name] = value
    cron.payload = payload
    if cron.enabled and given & {"schedule", "timezone", "end_time", "enabled"}:
        schedule.schedule_next(cron, now())
    cron.updated_at = now()
    await server.storage.crons.update(cron)
    server.scheduler.wake()
    return views.json_response(views.cron_view(cron))


@router.delete("/runs/crons/{cron_id}", status_code=204)
async def delete_cron(request: Request, cron_id: str) -> Response:
    server = server_of(request)
    await _get(server, cron_id, request)
    await server.storage.crons.delete(cron_id)
    return Response(status_code=204)


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
