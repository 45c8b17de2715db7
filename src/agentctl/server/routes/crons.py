"""Crons: runs submitted on a schedule, on a thread or each on a new thread."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from agentctl.server import lookup, views
from agentctl.server.access import Caller, caller_of
from agentctl.server.context import Server, server_of
from agentctl.server.cron_requests import CronCreate, CronPatch
from agentctl.server.errors import not_found
from agentctl.server.fields import Body, Metadata, PageQuery
from agentctl.server.routes.common import page, select_fields
from agentctl.server.schemas import CRON_LIST, CronOut
from agentctl.server.services import crons
from agentctl.storage.base import Cron, CronFilter, Page
from agentctl.storage.sorts import CronSort

router = APIRouter(tags=["crons"])


class CronCount(Body):
    assistant_id: str | None = None
    thread_id: str | None = None
    metadata: Metadata | None = None


class CronSearch(PageQuery, CronCount):
    enabled: bool | None = None
    sort_by: CronSort | None = None
    select: list[str] | None = None


@router.post("/runs/crons", response_model=CronOut)
async def create_cron(request: Request, body: CronCreate) -> Response:
    cron = await crons.create_cron(server_of(request), caller_of(request), body, None)
    return views.json_response(views.cron_view(cron))


@router.post("/threads/{thread_id}/runs/crons", response_model=CronOut)
async def create_thread_cron(request: Request, thread_id: str, body: CronCreate) -> Response:
    cron = await crons.create_cron(server_of(request), caller_of(request), body, thread_id)
    return views.json_response(views.cron_view(cron))


async def _search(
    server: Server, caller: Caller, body: CronCount, enabled: bool | None, page_: Page
) -> tuple[list[Cron], int]:
    assistant_id = body.assistant_id and lookup.assistant_key(server, body.assistant_id)
    metadata = caller.narrow(body.metadata)
    if metadata is None:
        return [], 0
    where = CronFilter(assistant_id or None, body.thread_id, enabled, metadata)
    return await server.storage.crons.search(where, page_)


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
    await crons.update_cron(server, cron, body)
    return views.json_response(views.cron_view(cron))


@router.delete("/runs/crons/{cron_id}", status_code=204)
async def delete_cron(request: Request, cron_id: str) -> Response:
    server = server_of(request)
    await _get(server, cron_id, request)
    await server.storage.crons.delete(cron_id)
    return Response(status_code=204)
