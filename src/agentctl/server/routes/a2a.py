"""`/a2a/{assistant_id}`: the deployed agent as an A2A peer, and its agent card.

The protocol is the official `a2a-sdk`'s: its JSON-RPC dispatcher (1.0 methods `SendMessage`,
`SendStreamingMessage`, `GetTask`, `CancelTask`, ... and, through its v0.3 adapter,
`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, ...), its request handler,
task lifecycle and SSE. What we add (`agentctl.server.a2a`): the executor that runs the
agent as an ordinary run of this server, owned by the caller; the ids (`contextId` = the
thread, task `"{contextId}:{run_id}"`); the task store; the card (with an `ETag`, so a
client revalidates it cheaply); and `params.refusal`, for params the SDK answers wrongly.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from fastapi import APIRouter, FastAPI, Request
from starlette.responses import JSONResponse, Response

from agentctl import serde
from agentctl.server import lookup
from agentctl.server.a2a.card import VERSION_HEADER, agent_card, card_json, card_version
from agentctl.server.a2a.context import ASSISTANT, CallerContextBuilder
from agentctl.server.a2a.executor import RunExecutor
from agentctl.server.a2a.params import refusal
from agentctl.server.a2a.tasks import RunTaskStore
from agentctl.server.a2a.turns import TurnBuilder
from agentctl.server.context import Server, server_of
from agentctl.server.public_url import Located, own_url
from agentctl.storage.base import Assistant

# A task waiting for input holds a little memory; after this long unused it is let go (its
# state stays in the task store, and the next message picks it up again).
IDLE_INTERRUPTED_SECONDS = 600.0
# How long a client may use the card without asking again (it changes with a deploy).
CARD_MAX_AGE_SECONDS = 300


@dataclass
class A2AEndpoint:
    """The SDK's handler and dispatcher for one server."""

    handler: DefaultRequestHandler
    dispatcher: JsonRpcDispatcher

    @classmethod
    def of(cls, server: Server) -> A2AEndpoint:
        tasks = RunTaskStore(server)
        default = server.deployment.assistant_id
        placeholder = Assistant(default, server.deployment.graph_id, server.deployment.graph_id)
        handler = DefaultRequestHandler(
            agent_executor=RunExecutor(server),
            task_store=tasks,
            agent_card=agent_card(server, placeholder, ""),
            request_context_builder=TurnBuilder(server, tasks),
            interrupted_task_timeout=IDLE_INTERRUPTED_SECONDS,
        )
        dispatcher = JsonRpcDispatcher(
            handler, context_builder=CallerContextBuilder(), enable_v0_3_compat=True
        )
        return cls(handler, dispatcher)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    try:
        yield
    finally:
        endpoint: A2AEndpoint | None = getattr(app.state, "a2a", None)
        if endpoint is not None:
            await endpoint.handler.aclose()


def _endpoint(request: Request) -> A2AEndpoint:
    endpoint: A2AEndpoint | None = getattr(request.app.state, "a2a", None)
    if endpoint is None:
        endpoint = request.app.state.a2a = A2AEndpoint.of(server_of(request))
    return endpoint


router = APIRouter(tags=["a2a"], lifespan=_lifespan)


@router.post("/a2a/{assistant_id}")
@router.post("/a2a/{assistant_id}/", include_in_schema=False)  # served, not redirected
async def a2a_rpc(assistant_id: str, request: Request) -> Response:
    """A2A JSON-RPC 2.0: `message/send`, `message/stream`, `tasks/get`, `tasks/cancel` (and
    the 1.0 names `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`)."""
    assistant = await lookup.get_assistant(server_of(request), assistant_id)
    request.scope.setdefault("state", {})[ASSISTANT] = assistant
    try:
        body = await request.json()  # kept by the request: the dispatcher reads it again
    except ValueError:
        body = None  # not JSON: the dispatcher answers -32700
    error = refusal(body)
    if error is not None:
        return JSONResponse(error)
    return await _endpoint(request).dispatcher.handle_requests(request)


@router.get("/.well-known/agent-card.json")
async def well_known_agent_card(request: Request, assistant_id: str | None = None) -> Response:
    """The agent card (public): of `assistant_id`, or of the deployment's agent."""
    server = server_of(request)
    assistant = await lookup.get_assistant(server, assistant_id or server.deployment.assistant_id)
    return _card_response(request, server, assistant, "public")


@router.get("/a2a/{assistant_id}/.well-known/agent-card.json")
async def assistant_agent_card(assistant_id: str, request: Request) -> Response:
    """The agent card of `assistant_id`, beside its endpoint."""
    server = server_of(request)
    assistant = await lookup.get_assistant(server, assistant_id)
    return _card_response(request, server, assistant, "private")


def _card_response(request: Request, server: Server, assistant: Assistant, scope: str) -> Response:
    """The card in the protocol version the client asks for (`A2A-Version`, a header or a
    query parameter), or 304 when the client's copy (`If-None-Match`) is still the card. Its
    URLs name the public URL, or else the request's `Host`: then no cache may keep it."""
    asked = request.headers.get(VERSION_HEADER) or request.query_params.get(VERSION_HEADER)
    base: Located = own_url(request, server.info.get("public_url"))
    body = serde.dumps(card_json(server, assistant, base.url, card_version(asked)))
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    cacheable = {"Cache-Control": f"{scope}, max-age={CARD_MAX_AGE_SECONDS}"}
    headers = {"ETag": etag, **base.cache_headers(cacheable)}
    # One card per protocol version (and per Host when the URLs are the request's).
    headers["Vary"] = ", ".join(filter(None, [headers.get("Vary"), VERSION_HEADER]))
    if _matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def _matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110's weak comparison: `W/` is ignored, `*` matches any."""
    if not if_none_match:
        return False
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags
