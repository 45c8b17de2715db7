"""A thread's state: read it (latest or at a checkpoint), update it, list its history."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from agentctl.errors import NotFound, Unprocessable
from agentctl.server import lookup, views
from agentctl.server.access import caller_of
from agentctl.server.context import Server, server_of
from agentctl.server.fields import Body, Limit, Metadata
from agentctl.server.limits import check_event_size, check_messages
from agentctl.server.openapi import CONFLICT
from agentctl.server.schemas import StateUpdateOut, ThreadStateOut
from agentctl.server.services.state import update_thread_state
from agentctl.server.state_view import select_state, state_view, thread_config

router = APIRouter(tags=["threads"])


class CheckpointRef(Body):
    thread_id: str | None = None
    checkpoint_ns: str = ""
    checkpoint_id: str | None = None
    checkpoint_map: dict[str, Any] | None = None


class StateAtCheckpoint(Body):
    checkpoint: CheckpointRef
    subgraphs: bool = False
    select: list[str] | None = None


class StateUpdate(Body):
    values: dict[str, Any] | list[dict[str, Any]] | None = None
    as_node: str | None = None
    checkpoint: CheckpointRef | None = None
    checkpoint_id: str | None = None


class HistoryQuery(Body):
    limit: Limit = 10
    before: str | CheckpointRef | None = None
    metadata: Metadata | None = None
    checkpoint: CheckpointRef | None = None
    select: list[str] | None = None


def _config(thread_id: str, checkpoint: CheckpointRef | None, checkpoint_id: str | None = None
            ) -> dict[str, Any]:  # fmt: skip
    ref = checkpoint or CheckpointRef()
    if ref.thread_id and ref.thread_id != thread_id:
        raise Unprocessable(
            f"checkpoint.thread_id: {ref.thread_id!r} is not the thread of the path "
            f"({thread_id}) — a checkpoint is read in its own thread; leave thread_id out"
        )
    return thread_config(
        thread_id,
        checkpoint_ns=ref.checkpoint_ns or None,
        checkpoint_id=ref.checkpoint_id or checkpoint_id,
        checkpoint_map=ref.checkpoint_map,
    )


async def _checked(request: Request, thread_id: str) -> Server:
    """The server, once the thread is known to be there and the caller's."""
    server = server_of(request)
    await lookup.get_thread(server, thread_id, caller_of(request))
    return server


async def _state(
    request: Request,
    thread_id: str,
    config: dict[str, Any],
    subgraphs: bool,
    select: list[str] | None,
) -> Response:
    """The thread's state at `config` (its latest when that names no checkpoint)."""
    server = await _checked(request, thread_id)
    snapshot = await server.deployment.runtime.graph.aget_state(config, subgraphs=subgraphs)
    checkpoint_id = config["configurable"].get("checkpoint_id")
    if checkpoint_id and snapshot.created_at is None:
        raise NotFound(f"checkpoint {checkpoint_id!r} not found on thread {thread_id}")
    return views.json_response(select_state(state_view(snapshot), select))


@router.get("/threads/{thread_id}/state", response_model=ThreadStateOut)
async def get_state(
    request: Request,
    thread_id: str,
    subgraphs: bool = False,
    select: Annotated[list[str] | None, Query()] = None,
) -> Response:
    return await _state(request, thread_id, thread_config(thread_id), subgraphs, select)


@router.get("/threads/{thread_id}/state/{checkpoint_id}", response_model=ThreadStateOut)
async def get_state_at(
    request: Request,
    thread_id: str,
    checkpoint_id: str,
    subgraphs: bool = False,
    select: Annotated[list[str] | None, Query()] = None,
) -> Response:
    config = thread_config(thread_id, checkpoint_id=checkpoint_id)
    return await _state(request, thread_id, config, subgraphs, select)


@router.post("/threads/{thread_id}/state/checkpoint", response_model=ThreadStateOut)
async def post_state_at(request: Request, thread_id: str, body: StateAtCheckpoint) -> Response:
    config = _config(thread_id, body.checkpoint)
    return await _state(request, thread_id, config, body.subgraphs, body.select)


@router.post("/threads/{thread_id}/state", response_model=StateUpdateOut, responses=CONFLICT)
async def update_state(request: Request, thread_id: str, body: StateUpdate) -> Response:
    check_messages(server_of(request).limits, "values", body.values)
    check_event_size(server_of(request).limits, "values", body.values)
    server = await _checked(request, thread_id)
    config = _config(thread_id, body.checkpoint, body.checkpoint_id)
    checkpoint = await update_thread_state(server, thread_id, config, body.values, body.as_node)
    return views.json_response({"checkpoint": checkpoint})


@router.get("/threads/{thread_id}/history", response_model=list[ThreadStateOut])
async def get_history(
    request: Request,
    thread_id: str,
    limit: Annotated[Limit, Query()] = 10,
    before: str | None = None,
) -> Response:
    # Built unchecked: the query parameters were checked as such.
    query = HistoryQuery.model_construct(limit=limit, before=before)
    return await post_history(request, thread_id, query)


@router.post("/threads/{thread_id}/history", response_model=list[ThreadStateOut])
async def post_history(
    request: Request, thread_id: str, body: HistoryQuery | None = None
) -> Response:
    server = await _checked(request, thread_id)
    body = body or HistoryQuery()
    before = body.before.checkpoint_id if isinstance(body.before, CheckpointRef) else body.before
    graph = server.deployment.runtime.graph
    states = [
        state_view(snapshot)
        async for snapshot in graph.aget_state_history(
            _config(thread_id, body.checkpoint),
            filter=body.metadata or None,
            before={"configurable": {"checkpoint_id": before}} if before else None,
            limit=body.limit,
        )
    ]
    return views.json_response([select_state(view, body.select) for view in states])
