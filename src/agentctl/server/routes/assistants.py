"""Assistants: versioned configurations of the one graph this server serves.

The deployment's own assistant (id = uuid5 of the graph name) always exists; more can be
created with their own config, context and metadata. A graph name is accepted wherever an
assistant id is.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from starlette.responses import Response

from agentctl.errors import NotFound
from agentctl.server import graph_schemas, lookup, views
from agentctl.server.access import caller_of
from agentctl.server.assistant_requests import AssistantCreate, AssistantPatch
from agentctl.server.context import server_of
from agentctl.server.fields import AssistantVersion, Body, Limit, Metadata, Offset, PageQuery
from agentctl.server.openapi import CONFLICT
from agentctl.server.routes.common import page, query_xray, select_fields
from agentctl.server.schemas import ASSISTANT_LIST, AssistantOut
from agentctl.server.services import assistants
from agentctl.storage.base import AssistantFilter, Page
from agentctl.storage.sorts import AssistantSort

router = APIRouter(tags=["assistants"])

AssistantField = Literal[
    "assistant_id", "graph_id", "name", "description", "config", "context", "created_at",
    "updated_at", "metadata", "version",
]  # fmt: skip


class AssistantCount(Body):
    metadata: Metadata | None = None
    graph_id: str | None = None
    name: str | None = None

    def where(self) -> AssistantFilter:
        return AssistantFilter(self.graph_id, self.name, self.metadata or {})


class AssistantSearch(PageQuery, AssistantCount):
    sort_by: AssistantSort | None = None
    select: list[AssistantField] | None = None


class VersionSearch(Body):
    metadata: Metadata | None = None
    limit: Limit = 10
    offset: Offset = 0


class SetLatest(Body):
    version: AssistantVersion


@router.post("/assistants", response_model=AssistantOut, responses=CONFLICT)
async def create_assistant(request: Request, body: AssistantCreate) -> Response:
    server = server_of(request)
    lookup.require_operator(caller_of(request), "create assistants")
    assistant = await assistants.create_assistant(server, body)
    return views.json_response(views.assistant_view(assistant))


@router.post("/assistants/search", response_model=ASSISTANT_LIST)
async def search_assistants(request: Request, body: AssistantSearch | None = None) -> Response:
    server = server_of(request)
    body = body or AssistantSearch()
    found, total = await server.storage.assistants.search(
        body.where(), page(body.limit, body.offset, body.sort_by, body.sort_order)
    )
    return views.json_response(
        [select_fields(views.assistant_view(a), body.select) for a in found],
        headers=views.page_headers(body.offset, body.limit, len(found), total),
    )


@router.post("/assistants/count", response_model=int)
async def count_assistants(request: Request, body: AssistantCount | None = None) -> Response:
    server = server_of(request)
    body = body or AssistantCount()
    _, total = await server.storage.assistants.search(body.where(), Page(limit=1))
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
    updated = await assistants.update_assistant(server, current, body)
    return views.json_response(views.assistant_view(updated))


@router.delete("/assistants/{assistant_id}", status_code=204, responses=CONFLICT)
async def delete_assistant(
    request: Request, assistant_id: str, delete_threads: bool = False
) -> Response:
    server = server_of(request)
    lookup.require_operator(caller_of(request), "delete assistants")
    assistant = await lookup.get_assistant(server, assistant_id)
    await assistants.delete_assistant(server, assistant.assistant_id, with_threads=delete_threads)
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
        raise NotFound(f"assistant {assistant.assistant_id} has no version {body.version}")
    return views.json_response(views.assistant_view(updated))
