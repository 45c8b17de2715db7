"""Assistants: versioned configurations of the one graph this server serves.

The deployment's own assistant (id = uuid5 of the graph name) always exists; more can be
created with their own config, context and metadata. A graph name is accepted wherever an
assistant id is.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from pydantic import Field
from starlette.responses import Response

from agentctl.server import graph_schemas, lookup, views
from agentctl.server.access import caller_of
from agentctl.server.app import Server, server_of
from agentctl.server.errors import ApiError, conflict
from agentctl.server.fields import Config, Metadata
from agentctl.server.openapi import CONFLICT
from agentctl.server.routes.common import (
    Body,
    Limit,
    Offset,
    OnConflict,
    SortOrder,
    page,
    query_xray,
    select_fields,
)
from agentctl.server.routes.crons import delete_crons_where
from agentctl.server.routes.threads import delete_threads_where
from agentctl.server.schemas import ASSISTANT_LIST, AssistantOut
from agentctl.storage.base import Assistant, Page, new_id, now
from agentctl.storage.sorts import AssistantSort

router = APIRouter(tags=["assistants"])

AssistantField = Literal[
    "assistant_id", "graph_id", "name", "description", "config", "context", "created_at",
    "updated_at", "metadata", "version",
]  # fmt: skip


class AssistantCreate(Body):
    graph_id: str
    assistant_id: str | None = None
    config: Config | None = None
    context: dict[str, Any] | None = None
    metadata: Metadata | None = None
    if_exists: OnConflict = "raise"
    name: str | None = None
    description: str | None = None


class AssistantPatch(Body):
    graph_id: str | None = None
    config: Config | None = None
    context: dict[str, Any] | None = None
    metadata: Metadata | None = None
    name: str | None = None
    description: str | None = None


class AssistantSearch(Body):
    metadata: Metadata | None = None
    graph_id: str | None = None
    name: str | None = None
    limit: Limit = 10
    offset: Offset = 0
    sort_by: AssistantSort | None = None
    sort_order: SortOrder | None = None
    select: list[AssistantField] | None = None


class AssistantCount(Body):
    metadata: Metadata | None = None
    graph_id: str | None = None
    name: str | None = None


class VersionSearch(Body):
    metadata: Metadata | None = None
    limit: Limit = 10
    offset: Offset = 0


class SetLatest(Body):
    version: Annotated[int, Field(ge=1)]


def check_graph(server: Server, graph_id: str) -> str:
    served = server.deployment.graph_id
    if graph_id != served:
        raise ApiError(
            422, f"graph {graph_id!r} is not served here — this server serves graph {served!r}"
        )
    return graph_id


@router.post("/assistants", response_model=AssistantOut, responses=CONFLICT)
async def create_assistant(request: Request, body: AssistantCreate) -> Response:
    server = server_of(request)
    lookup.require_operator(caller_of(request), "create assistants")
    check_graph(server, body.graph_id)
    assistant_id = body.assistant_id or new_id()
    lookup.check_uuid("assistant_id", assistant_id)
    existing = await server.storage.assistants.get(assistant_id)
    if existing is not None:
        if body.if_exists == "do_nothing":
            return views.json_response(views.assistant_view(existing))
        raise conflict(
            f"assistant {assistant_id} already exists — use another id, PATCH it, or pass "
            'if_exists="do_nothing"'
        )
    assistant = Assistant(
        assistant_id=assistant_id,
        graph_id=body.graph_id,
        name=body.name or "Untitled",
        description=body.description,
        config=body.config or {},
        context=body.context or {},
        metadata=body.metadata or {},
    )
    await server.storage.assistants.put(assistant)
    return views.json_response(views.assistant_view(assistant))


@router.post("/assistants/search", response_model=ASSISTANT_LIST)
async def search_assistants(request: Request, body: AssistantSearch | None = None) -> Response:
    server = server_of(request)
    body = body or AssistantSearch()
    found, total = await server.storage.assistants.search(
        graph_id=body.graph_id,
        name=body.name,
        metadata=body.metadata or {},
        page=page(body.limit, body.offset, body.sort_by, body.sort_order),
    )
    return views.json_response(
        [select_fields(views.assistant_view(a), body.select) for a in found],
        headers=views.page_headers(body.offset, body.limit, len(found), total),
    )


@router.post("/assistants/count", response_model=int)
async def count_assistants(request: Request, body: AssistantCount | None = None) -> Response:
    server = server_of(request)
    body = body or AssistantCount()
    _, total = await server.storage.assistants.search(
        graph_id=body.graph_id, name=body.name, metadata=body.metadata or {}, page=Page(limit=1)
    )
    return views.json_response(total)


@router.get("/assistants/{assistant_id}", response_model=AssistantOut)
async def get_assistant(request: Request, assistant_id: str) -> Response:
    assistant = await lookup.get_assistant(server_of(request), assistant_id)
    return views.json_response(views.assistant_view(assistant))


@router.patch("/assistants/{assistant_id}", response_model=AssistantOut)
async def patch_assistant(request: Request, assistant_id: str, body: AssistantPatch) -> Response:
    server = server_of(request)
    lookup.require_operator(caller_of(request), "change assistants")
    current = await lookup.get_assistant(server, assistant_id)
    if body.graph_id is not None:
        check_graph(server, body.graph_id)
    version = await server.storage.assistants.latest_version(current.assistant_id) + 1
    updated = Assistant(
        assistant_id=current.assistant_id,
        graph_id=body.graph_id or current.graph_id,
        name=body.name or current.name,
        description=body.description if body.description is not None else current.description,
        config=body.config if body.config is not None else current.config,
        context=body.context if body.context is not None else current.context,
        metadata={**current.metadata, **(body.metadata or {})},
        version=version,
        created_at=current.created_at,
        updated_at=now(),
    )
    await server.storage.assistants.put(updated)
    return views.json_response(views.assistant_view(updated))


@router.delete("/assistants/{assistant_id}", status_code=204, responses=CONFLICT)
async def delete_assistant(
    request: Request, assistant_id: str, delete_threads: bool = False
) -> Response:
    server = server_of(request)
    lookup.require_operator(caller_of(request), "delete assistants")
    assistant = await lookup.get_assistant(server, assistant_id)
    if assistant.assistant_id == server.deployment.assistant_id:
        raise conflict(
            f"assistant {assistant.assistant_id} is the deployment's own assistant for graph "
            f"{server.deployment.graph_id!r} and cannot be deleted — PATCH it instead"
        )
    # Its runs in flight stop first (as the reference does), then what it scheduled.
    active = await server.storage.runs.all_active()
    await server.engine.cancel_and_wait(
        [run for run in active if run.assistant_id == assistant.assistant_id]
    )
    await delete_crons_where(server, assistant_id=assistant.assistant_id)
    if delete_threads:  # the threads its runs named (metadata.assistant_id)
        await delete_threads_where(server, {"assistant_id": assistant.assistant_id})
    await server.storage.assistants.delete(assistant.assistant_id)
    return Response(status_code=204)


@router.get("/assistants/{assistant_id}/graph", response_model=dict[str, Any])
async def get_assistant_graph(
    request: Request, assistant_id: str, xray: str | None = None
) -> Response:
    server = server_of(request)
    await lookup.get_assistant(server, assistant_id)
    depth = query_xray(xray)
    drawable = await server.deployment.runtime.graph.aget_graph(xray=depth)
    return views.json_response(drawable.to_json())


@router.get("/assistants/{assistant_id}/schemas", response_model=dict[str, Any])
async def get_assistant_schemas(request: Request, assistant_id: str) -> Response:
    server = server_of(request)
    assistant = await lookup.get_assistant(server, assistant_id)
    graph = server.deployment.runtime.graph
    return views.json_response(graph_schemas.graph_schemas(graph, assistant.graph_id))


@router.get("/assistants/{assistant_id}/subgraphs", response_model=dict[str, Any])
async def get_assistant_subgraphs(
    request: Request, assistant_id: str, recurse: bool = False
) -> Response:
    return await _subgraphs(request, assistant_id, None, recurse)


@router.get("/assistants/{assistant_id}/subgraphs/{namespace}", response_model=dict[str, Any])
async def get_assistant_subgraph(
    request: Request, assistant_id: str, namespace: str, recurse: bool = False
) -> Response:
    return await _subgraphs(request, assistant_id, namespace, recurse)


async def _subgraphs(
    request: Request, assistant_id: str, namespace: str | None, recurse: bool
) -> Response:
    server = server_of(request)
    assistant = await lookup.get_assistant(server, assistant_id)
    graph = server.deployment.runtime.graph
    found = graph_schemas.subgraph_schemas(
        graph, assistant.graph_id, namespace=namespace, recurse=recurse
    )
    return views.json_response(found)


@router.post("/assistants/{assistant_id}/versions", response_model=list[AssistantOut])
async def list_versions(
    request: Request, assistant_id: str, body: VersionSearch | None = None
) -> Response:
    server = server_of(request)
    assistant = await lookup.get_assistant(server, assistant_id)
    body = body or VersionSearch()
    versions = await server.storage.assistants.versions(
        assistant.assistant_id, metadata=body.metadata or {}, limit=body.limit, offset=body.offset
    )
    return views.json_response([views.assistant_view(v) for v in versions])


@router.post("/assistants/{assistant_id}/latest", response_model=AssistantOut)
async def set_latest_version(request: Request, assistant_id: str, body: SetLatest) -> Response:
    server = server_of(request)
    lookup.require_operator(caller_of(request), "change assistants")
    assistant = await lookup.get_assistant(server, assistant_id)
    updated = await server.storage.assistants.set_latest(assistant.assistant_id, body.version)
    if updated is None:
        raise ApiError(404, f"assistant {assistant.assistant_id} has no version {body.version}")
    return views.json_response(views.assistant_view(updated))
