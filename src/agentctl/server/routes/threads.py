"""Threads: create, search, count, read, patch, delete, copy and prune.

A thread's `values` are its latest checkpoint's, read through the graph so every reducer
and delta channel is applied as the agent itself would see them.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Literal, get_args

from fastapi import APIRouter, Header, Request
from langgraph.types import StateUpdate
from pydantic import field_validator
from starlette.responses import Response

from agentctl.server import extract, lookup, views
from agentctl.server.access import Caller, caller_of, without_owner
from agentctl.server.context import Server, server_of
from agentctl.server.errors import not_found
from agentctl.server.fields import Body, Metadata, OnConflict, PageQuery
from agentctl.server.limits import check_messages
from agentctl.server.openapi import CONFLICT
from agentctl.server.routes.common import page, select_fields
from agentctl.server.schemas import THREAD_LIST, PrunedOut, ThreadOut
from agentctl.server.services import threads
from agentctl.server.state_view import thread_values
from agentctl.server.values_search import search_by_values
from agentctl.storage.base import Page, Thread, ThreadFilter, ThreadStatus, ThreadUpdate
from agentctl.storage.sorts import ThreadSort

router = APIRouter(tags=["threads"])

ThreadField = Literal[
    "thread_id", "created_at", "updated_at", "state_updated_at", "metadata", "config",
    "context", "status", "values", "interrupts",
]  # fmt: skip


class Update(Body):
    values: dict[str, Any] | None = None
    as_node: str
    command: dict[str, Any] | None = None

    @field_validator("command")
    @classmethod
    def _no_command(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            raise ValueError(
                "a superstep's update cannot be a command here — send its `values` with "
                "`as_node` instead"
            )
        return value


class Superstep(Body):
    updates: list[Update]


class ThreadCreate(Body):
    thread_id: str | None = None
    metadata: Metadata | None = None
    if_exists: OnConflict = "raise"
    supersteps: list[Superstep] | None = None


class ThreadPatch(Body):
    metadata: Metadata | None = None


class ThreadCount(Body):
    metadata: Metadata | None = None
    values: dict[str, Any] | None = None
    status: ThreadStatus | None = None
    ids: list[str] | None = None


class ThreadSearch(PageQuery, ThreadCount):
    sort_by: ThreadSort | None = None
    select: list[ThreadField] | None = None
    extract: dict[str, str] | None = None  # see server/extract.py


class ThreadPrune(Body):
    thread_ids: list[str]
    strategy: Literal["delete", "keep_latest"] = "delete"


async def thread_json(server: Server, thread: Thread, *, values: bool = True) -> dict[str, Any]:
    graph = server.deployment.runtime.graph
    state = await thread_values(graph, thread.thread_id) if values else None
    return views.thread_view(thread, state)


@router.post("/threads", response_model=ThreadOut, responses=CONFLICT)
async def create_thread(request: Request, body: ThreadCreate | None = None) -> Response:
    server, caller = server_of(request), caller_of(request)
    body = body or ThreadCreate()
    for i, step in enumerate(body.supersteps or ()):
        for j, update in enumerate(step.updates):
            check_messages(server.limits, f"supersteps[{i}].updates[{j}].values", update.values)
    thread_id = lookup.check_uuid("thread_id", body.thread_id or str(uuid.uuid4()))
    steps = [
        [StateUpdate(update.values, update.as_node) for update in step.updates]
        for step in body.supersteps or ()
    ]
    thread, created = await threads.create_thread(
        server, caller, thread_id, body.metadata, if_exists=body.if_exists, supersteps=steps
    )
    if created and not steps:  # no state yet: nothing to read
        return views.json_response(views.thread_view(thread))
    return views.json_response(await thread_json(server, thread))


async def _search(
    server: Server, caller: Caller, body: ThreadCount, page_: Page, *, with_values: bool
) -> tuple[list[dict[str, Any]], int]:
    storage = server.storage
    metadata = caller.narrow(body.metadata)
    if metadata is None:
        return [], 0
    where = ThreadFilter(metadata, body.status, body.ids)
    if body.values:
        found, total = await search_by_values(server, body.values, where, page_)
    else:
        found, total = await storage.threads.search(where, page_)
    return [await thread_json(server, t, values=with_values) for t in found], total


@router.post("/threads/search", response_model=THREAD_LIST)
async def search_threads(request: Request, body: ThreadSearch | None = None) -> Response:
    server = server_of(request)
    body = body or ThreadSearch()
    paths = extract.check_extract(body.extract or {}, get_args(ThreadField))
    with_values = not body.select or "values" in body.select or "values" in extract.roots(paths)
    found, total = await _search(
        server,
        caller_of(request),
        body,
        page(body.limit, body.offset, body.sort_by, body.sort_order),
        with_values=with_values,
    )
    shown = [select_fields(view, body.select) for view in found]
    if paths:
        for view, thread in zip(found, shown, strict=True):
            thread["extracted"] = extract.extracted(view, paths)
    return views.json_response(
        shown, headers=views.page_headers(body.offset, body.limit, len(found), total)
    )


@router.post("/threads/count", response_model=int)
async def count_threads(request: Request, body: ThreadCount | None = None) -> Response:
    server = server_of(request)
    body = body or ThreadCount()
    _, total = await _search(server, caller_of(request), body, Page(limit=1), with_values=False)
    return views.json_response(total)


@router.post("/threads/prune", response_model=PrunedOut)
async def prune_threads(request: Request, body: ThreadPrune) -> Response:
    server, caller = server_of(request), caller_of(request)
    pruned = 0
    for thread_id in _unique(body.thread_ids):
        lookup.check_uuid("thread id", thread_id)
        thread = await server.storage.threads.get(thread_id)
        if thread is None or not caller.owns(thread.metadata):
            continue
        if body.strategy == "delete":
            pruned += await threads.delete_thread(server, thread_id)
        else:
            pruned += await threads.keep_latest(server, thread_id)
    return views.json_response({"pruned_count": pruned})


def _unique(ids: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ids))


@router.get("/threads/{thread_id}", response_model=ThreadOut)
async def get_thread(request: Request, thread_id: str) -> Response:
    server = server_of(request)
    thread = await lookup.get_thread(server, thread_id, caller_of(request))
    return views.json_response(await thread_json(server, thread))


@router.patch("/threads/{thread_id}", response_model=ThreadOut)
async def patch_thread(
    request: Request,
    thread_id: str,
    body: ThreadPatch,
    prefer: str | None = Header(default=None),
) -> Response:
    server = server_of(request)
    await lookup.get_thread(server, thread_id, caller_of(request))
    change = ThreadUpdate(metadata=without_owner(body.metadata))
    thread = await server.storage.threads.update(thread_id, change)
    if thread is None:  # deleted in between
        raise not_found("thread", thread_id)
    if prefer and "return=minimal" in prefer:
        return Response(status_code=204)
    return views.json_response(await thread_json(server, thread))


@router.delete("/threads/{thread_id}", status_code=204)
async def delete_thread_route(request: Request, thread_id: str) -> Response:
    server = server_of(request)
    await lookup.get_thread(server, thread_id, caller_of(request))
    await threads.delete_thread(server, thread_id)
    return Response(status_code=204)


@router.post("/threads/{thread_id}/copy", response_model=ThreadOut)
async def copy_thread(request: Request, thread_id: str) -> Response:
    server, caller = server_of(request), caller_of(request)
    source = await lookup.get_thread(server, thread_id, caller)
    copy = await threads.copy_thread(server, source, caller)
    return views.json_response(await thread_json(server, copy))
