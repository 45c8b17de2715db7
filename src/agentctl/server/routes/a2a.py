"""`/a2a/{assistant_id}`: the deployed agent as an A2A peer, and its agent card.

The protocol is the official `a2a-sdk`'s: its JSON-RPC dispatcher (1.0 methods `SendMessage`,
`SendStreamingMessage`, `GetTask`, `CancelTask`, ... and, through its v0.3 adapter,
`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, ...), its request handler,
task lifecycle and SSE. What we add (`agentctl.server.a2a`): the executor that runs the
agent as an ordinary run of this server, owned by the caller; the ids (`contextId` = the
thread, task `"{contextId}:{run_id}"`); the task store; the card.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from fastapi import APIRouter, FastAPI, Request
from starlette.responses import JSONResponse, Response

from agentctl.server import lookup
from agentctl.server.a2a.card import agent_card, card_json
from agentctl.server.a2a.context import ASSISTANT, CallerContextBuilder
from agentctl.server.a2a.executor import RunExecutor
from agentctl.server.a2a.tasks import RunTaskStore
from agentctl.server.a2a.turns import TurnBuilder
from agentctl.server.app import Server, server_of
from agentctl.storage.base import Assistant

# A task waiting for input holds a little memory; after this long unused it is let go (its
# state stays in the task store, and the next message picks it up again).
IDLE_INTERRUPTED_SECONDS = 600.0


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
async def a2a_rpc(assistant_id: str, request: Request) -> Response:
    """A2A JSON-RPC 2.0: `message/send`, `message/stream`, `tasks/get`, `tasks/cancel` (and
    the 1.0 names `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`)."""
    assistant = await lookup.get_assistant(server_of(request), assistant_id)
    request.scope.setdefault("state", {})[ASSISTANT] = assistant
    return await _endpoint(request).dispatcher.handle_requests(request)


@router.get("/.well-known/agent-card.json")
async def well_known_agent_card(request: Request, assistant_id: str | None = None) -> Response:
    """The agent card (public): of `assistant_id`, or of the deployment's agent."""
    server = server_of(request)
    assistant = await lookup.get_assistant(server, assistant_id or server.deployment.assistant_id)
    return JSONResponse(card_json(server, assistant, _base_url(request)))


@router.get("/a2a/{assistant_id}/.well-known/agent-card.json")
async def assistant_agent_card(assistant_id: str, request: Request) -> Response:
    """The agent card of `assistant_id`, beside its endpoint."""
    server = server_of(request)
    assistant = await lookup.get_assistant(server, assistant_id)
    return JSONResponse(card_json(server, assistant, _base_url(request)))


def _base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")
