"""Threads: create, search, count, read, patch, delete, copy and prune.

A thread's `values` are its latest checkpoint's, read through the graph so every reducer
and delta channel is applied as the agent itself would see them.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Literal, get_args

from fastapi import APIRouter, Header, Request
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.types import StateUpdate
from starlette.responses import Response

from agentctl.server import extract, lookup, views
from agentctl.server.access import Caller, caller_of, without_owner
from agentctl.server.app import Server, server_of
from agentctl.server.errors import ApiError, conflict, not_found
from agentctl.server.fields import Metadata
from agentctl.server.limits import check_messages
from agentctl.server.openapi import CONFLICT
from agentctl.server.routes.common import (
    Body,
    Limit,
    Offset,
    OnConflict,
    SortOrder,
    page,
    select_fields,
)
from agentctl.server.routes.crons import delete_crons_where
from agentctl.server.schemas import THREAD_LIST, PrunedOut, ThreadOut
from agentctl.server.state_view import thread_config, thread_values
from agentctl.server.values_search import search_by_values
from agentctl.storage.base import Page, Thread, ThreadStatus, now
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


class ThreadSearch(ThreadCount):
    limit: Limit = 10
    offset: Offset = 0
    sort_by: ThreadSort | None = None
    sort_order: SortOrder | None = None
    select: list[ThreadField] | None = None
    extract: dict[str, str] | None = None  # see server/extract.py


class ThreadPrune(Body):
    thread_ids: list[str]
    strategy: Literal["delete", "keep_latest"] = "delete"


async def thread_json(server: Server, thread: Thread, *, values: bool = True) -> dict[str, Any]:
    graph = server.deployment.runtime.graph
    state = await thread_values(graph, thread.thread_id) if values else None
    return views.thread_view(thread, state)


async def delete_thread(server: Server, thread_id: str) -> bool:
    """Delete a thread with its runs (cancelled first), events, checkpoints and crons."""
    await server.engine.cancel_and_wait(await server.storage.runs.active(thread_id))
    await delete_crons_where(server, thread_id=thread_id)
    return await server.storage.threads.delete(thread_id)


async def delete_threads_where(server: Server, metadata: dict[str, Any]) -> int:
    deleted = 0
    while True:
        found, _ = await server.storage.threads.search(
            metadata=metadata, status=None, ids=None, page=Page(limit=100)
        )
        if not found:
            return deleted
        for thread in found:
            deleted += await delete_thread(server, thread.thread_id)


async def apply_supersteps(server: Server, thread_id: str, supersteps: list[Superstep]) -> None:
    graph = server.deployment.runtime.graph
    steps = [
        [StateUpdate(update.values, update.as_node) for update in step.updates]
        for step in supersteps
    ]
    try:
        await graph.abulk_update_state(thread_config(thread_id), steps)
    except Exception as exc:
        await server.storage.threads.delete(thread_id)
        raise ApiError(422, f"supersteps could not be applied: {exc}") from None


@router.post("/threads", response_model=ThreadOut, responses=CONFLICT)
async def create_thread(request: Request, body: ThreadCreate | None = None) -> Response:
    server, caller = server_of(request), caller_of(request)
    body = body or ThreadCreate()
    for i, step in enumerate(body.supersteps or ()):
        for j, update in enumerate(step.updates):
            check_messages(server.limits, f"supersteps[{i}].updates[{j}].values", update.values)
    thread_id = lookup.check_uuid("thread_id", body.thread_id or str(uuid.uuid4()))
    thread = Thread(thread_id=thread_id, metadata=caller.stamp(body.metadata))
    if not await server.storage.threads.create(thread):
        existing = await server.storage.threads.get(thread_id)
        if existing is not None and not caller.owns(existing.metadata):
            # Another user's id: the 404 of GET, not "exists", so nothing confirms it.
            raise not_found("thread", thread_id)
        if body.if_exists == "do_nothing" and existing is not None:
            return views.json_response(await thread_json(server, existing))
        raise conflict(
            f'thread {thread_id} already exists — use another id or pass if_exists="do_nothing"'
        )
    if body.supersteps:
        await apply_supersteps(server, thread_id, body.supersteps)
        return views.json_response(await thread_json(server, thread))
    return views.json_response(views.thread_view(thread))


async def _search(
    server: Server, caller: Caller, body: ThreadCount, page_: Page, *, with_values: bool
) -> tuple[list[dict[str, Any]], int]:
    storage = server.storage
    metadata = caller.narrow(body.metadata)
    if metadata is None:
        return [], 0
    if not body.values:
        found, total = await storage.threads.search(
            metadata=metadata, status=body.status, ids=body.ids, page=page_
        )
        return [await thread_json(server, t, values=with_values) for t in found], total
    found, total = await search_by_values(
        server, body.values, metadata=metadata, status=body.status, ids=body.ids, page=page_
    )
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
            pruned += await delete_thread(server, thread_id)
        else:
            pruned += await keep_latest(server, thread_id)
    return views.json_response({"pruned_count": pruned})


async def keep_latest(server: Server, thread_id: str) -> bool:
    """Drop every checkpoint of the thread but the latest, keeping its state.

    A `DeltaChannel` (the agent's messages and files) stores only writes, and its value is
    rebuilt from the checkpoints before; so the latest checkpoint first gets a full snapshot
    of each such channel. A thread whose delta channel cannot be read back is left alone."""
    graph = server.deployment.runtime.graph
    checkpointer = server.storage.checkpointer
    latest = await checkpointer.aget_tuple(thread_config(thread_id))
    if latest is None:
        return True
    delta = [k for k, ch in graph.channels.items() if isinstance(ch, DeltaChannel)]
    if any(k not in graph.stream_channels_list for k in delta):
        return False
    if delta:
        values = (await graph.aget_state(latest.config)).values
        checkpoint = dict(latest.checkpoint)
        checkpoint["channel_values"] = {
            **checkpoint["channel_values"],
            **{k: _DeltaSnapshot(values[k]) for k in delta if k in values},
        }
        metadata = dict(latest.metadata)
        counters = dict(metadata.get("counters_since_delta_snapshot") or {})
        metadata["counters_since_delta_snapshot"] = {
            k: v for k, v in counters.items() if k not in delta
        }
        root = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        await checkpointer.aput(root, checkpoint, metadata, {})
    await checkpointer.aprune_to_latest(thread_id)
    return True


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
    thread = await server.storage.threads.update(thread_id, metadata=without_owner(body.metadata))
    if thread is None:  # deleted in between
        raise not_found("thread", thread_id)
    if prefer and "return=minimal" in prefer:
        return Response(status_code=204)
    return views.json_response(await thread_json(server, thread))


@router.delete("/threads/{thread_id}", status_code=204)
async def delete_thread_route(request: Request, thread_id: str) -> Response:
    server = server_of(request)
    await lookup.get_thread(server, thread_id, caller_of(request))
    await delete_thread(server, thread_id)
    return Response(status_code=204)


@router.post("/threads/{thread_id}/copy", response_model=ThreadOut)
async def copy_thread(request: Request, thread_id: str) -> Response:
    server, caller = server_of(request), caller_of(request)
    source = await lookup.get_thread(server, thread_id, caller)
    copy = Thread(
        thread_id=str(uuid.uuid4()),
        metadata={**source.metadata, **caller.stamp({})},
        status="idle" if source.status == "busy" else source.status,
        interrupts=source.interrupts,
        created_at=now(),
    )
    await server.storage.threads.create(copy)
    await server.storage.checkpointer.acopy_thread(source.thread_id, copy.thread_id)
    return views.json_response(await thread_json(server, copy))
