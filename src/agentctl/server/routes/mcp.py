"""`/mcp`: the deployed agent as one MCP tool, over streamable HTTP.

The protocol is the official `mcp` package's: a low-level server behind stateless
`StreamableHTTPSessionManager`s (one answering `application/json`, one answering SSE, with
keep-alive pings during long runs, for clients that accept `text/event-stream`). It
negotiates every protocol version it knows (2024-11-05 … its latest) and checks params.
What we add:

- the tool: named after the agent, described by AGENTS.md; a call is an ordinary run owned
  by the caller `Authentication` admitted (stateless, or on the `thread_id` it names); a
  run that stops for the user to connect an account is a tool error saying where;
- `_refusal`, a check of the JSON-RPC message before the package sees it, because the
  package answers an unknown method or a message that is not JSON-RPC with -32602 (invalid
  params), params that are not an object with a made-up id, and takes a request whose id is
  neither a string nor an integer for a notification (no answer at all): here they get
  -32601, -32600 and -32602 (saying which param is wrong) with the id JSON-RPC asks for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import mcp.types as types
from fastapi import APIRouter, FastAPI
from mcp.server.lowlevel import Server as ProtocolServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import McpError
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from agentctl import serde
from agentctl._version import __version__
from agentctl.errors import AuthError, NotDeployed, RequestError
from agentctl.server import jsonrpc
from agentctl.server.access import Caller, caller_of
from agentctl.server.consents import ask_to_connect, connection_requests
from agentctl.server.content import text_of
from agentctl.server.context import Server
from agentctl.server.fields import Body
from agentctl.server.run_requests import RunCreate
from agentctl.server.run_streams import wait_for_result
from agentctl.server.services.runs import start_run
from agentctl.storage.base import Run

# The methods answered, and the request each one is (its params checked by `_refusal`).
SERVED_METHODS: dict[str, type[BaseModel]] = {
    "initialize": types.InitializeRequest,
    "ping": types.PingRequest,
    "tools/list": types.ListToolsRequest,
    "tools/call": types.CallToolRequest,
}

THREAD_ID_HELP = (
    "Optional. A UUID naming a conversation: calls with the same thread_id continue it and "
    "see its earlier turns (a new UUID starts one). Leave it out for a one-off question."
)


class ToolInput(Body):  # its values checked as the API's (`fields.check_json`)
    message: str
    thread_id: str | None = None


def tool_definition(server: Server) -> types.Tool:
    runtime = server.deployment.runtime
    return types.Tool(
        name=runtime.name,
        title=runtime.name,
        description=runtime.description,
        inputSchema={
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "What to ask the agent."},
                "thread_id": {"type": "string", "format": "uuid", "description": THREAD_ID_HELP},
            },
            "required": ["message"],
        },
        annotations=types.ToolAnnotations(
            readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=True
        ),
    )


def protocol_server(server: Server) -> ProtocolServer[Any, Request]:
    """The MCP server of the agent `server` serves."""
    # Named after the agent on each request (a deploy or reload may rename it).
    protocol: ProtocolServer[Any, Request] = ProtocolServer("agentctl", version=__version__)

    async def list_tools(req: types.ListToolsRequest) -> types.ServerResult:
        return types.ServerResult(types.ListToolsResult(tools=[tool_definition(server)]))

    async def call_tool(req: types.CallToolRequest) -> types.ServerResult:
        name = server.deployment.graph_id
        if req.params.name != name:
            raise McpError(
                types.ErrorData(
                    code=types.INVALID_PARAMS,
                    message=f"Unknown tool: {req.params.name} — this server's tool is {name!r}",
                )
            )
        try:
            arguments = ToolInput.model_validate(req.params.arguments or {})
        except ValidationError as exc:
            problems = jsonrpc.problems(exc, root="arguments")
            return _result(f"invalid arguments — {problems}", error=True)
        request = protocol.request_context.request
        assert request is not None  # the streamable HTTP transport always passes it
        try:
            return await run_tool(server, caller_of(request), arguments)
        except (RequestError, AuthError) as exc:  # AuthError: `caller_of` found no caller
            return _result(str(exc), error=True)

    # Registered as they are, not with the package's decorators: `call_tool()` would make an
    # unknown tool a tool error instead of the protocol error the specification asks for.
    protocol.request_handlers[types.ListToolsRequest] = list_tools
    protocol.request_handlers[types.CallToolRequest] = call_tool
    return protocol


async def run_tool(server: Server, caller: Caller, arguments: ToolInput) -> types.ServerResult:
    """Run the agent on `arguments.message` as `caller` and answer with its reply."""
    body = RunCreate(
        assistant_id=server.deployment.assistant_id,
        input={"messages": [{"role": "user", "content": arguments.message}]},
        if_not_exists="create",
    )
    run = await start_run(server, caller, body, arguments.thread_id, wait=True)
    result: bytes = b"null"
    async for chunk in wait_for_result(server, run, from_events=run.temporary):
        if chunk != b"\n":
            result = chunk
    return await _outcome(server, run, serde.loads(result), arguments.thread_id)


async def _outcome(
    server: Server, run: Run, values: Any, thread_id: str | None
) -> types.ServerResult:
    """The tool result of a run that ended with `values` (as `wait` answers them)."""
    facts: dict[str, Any] = {"thread_id": thread_id, "run_id": run.run_id}
    if isinstance(values, dict) and "__error__" in values:
        failure = values["__error__"]
        if isinstance(failure, dict):
            failure = f"{failure.get('error', 'Error')}: {failure.get('message', '')}"
        text = f"the agent's run failed — {failure}"
        return _result(text, error=True, facts={**facts, "status": "error"})
    if isinstance(values, dict) and values.get("__interrupt__"):
        pending = [i.get("value", i) if isinstance(i, dict) else i for i in values["__interrupt__"]]
        consent = connection_result(pending, facts)
        if consent is not None:
            return consent
        if thread_id is None:
            how = "This call had no thread_id, so the run cannot be resumed; call again with one."
        else:
            how = (
                f"Resume it on thread {thread_id} with the agent server's API: POST "
                f'/threads/{thread_id}/runs with {{"command": {{"resume": …}}}}.'
            )
        text = f"The agent is waiting for approval: {serde.dumps(pending).decode()}. {how}"
        return _result(text, facts={**facts, "status": "interrupted"})
    answer = last_answer(values)
    final = await server.storage.runs.get(run.run_id)
    if answer is None or (final is not None and final.status == "interrupted"):
        cancelled = final is not None and final.status == "interrupted"
        text = "the agent's run ended without an answer" + (" (cancelled)" if cancelled else "")
        return _result(text, error=True, facts={**facts, "status": "error"})
    return _result(answer, facts={**facts, "status": "success"})


def connection_result(pending: list[Any], facts: dict[str, Any]) -> types.ServerResult | None:
    """The tool error of a run that stopped for the user to connect their account to an MCP
    server (`server/consents.py`); None when it waits for something else."""
    requests = connection_requests(pending)
    if not requests:
        return None
    asks = " ".join(ask_to_connect(request) for request in requests)
    text = (
        f"The agent cannot go on until the user connects: {asks} Once connected, call this "
        "tool again"
        + (f" with thread_id {facts['thread_id']}" if facts.get("thread_id") else "")
        + " to go on."
    )
    first = requests[0]
    return _result(
        text,
        error=True,
        facts={
            **facts,
            "status": "connection_required",
            "server": first.get("server"),
            "authorization_url": first["authorization_url"],
        },
    )


def last_answer(values: Any) -> str | None:
    """The text of the last message of `values`, when the agent wrote it."""
    messages = values.get("messages") if isinstance(values, dict) else None
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None
    last = messages[-1]
    if last.get("type") not in ("ai", "AIMessageChunk"):
        return None
    content = last.get("content")
    return text_of(content) if isinstance(content, str | list) else None


def _result(
    text: str, *, error: bool = False, facts: dict[str, Any] | None = None
) -> types.ServerResult:
    return types.ServerResult(
        types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structuredContent=facts,
            isError=error,
        )
    )


class McpEndpoint:
    """The ASGI app at `/mcp` of one application."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.protocol = protocol_server(server)
        self.json = StreamableHTTPSessionManager(self.protocol, json_response=True, stateless=True)
        self.sse = StreamableHTTPSessionManager(self.protocol, json_response=False, stateless=True)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(self.json.run())
            await stack.enter_async_context(self.sse.run())
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left (or the body was over the limit, already answered)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        refusal = _refusal(body)
        if refusal is not None:
            status, error = refusal
            await _send_json(send, status, error)
            return
        if not self.server.deployment.ready:
            refused = NotDeployed()
            await _send_json(send, refused.status, {"detail": str(refused)})
            return
        self.protocol.name = self.server.deployment.graph_id  # a reload may rename the agent
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        accept = dict(scope["headers"]).get(b"accept", b"")
        manager = self.sse if b"text/event-stream" in accept else self.json
        await manager.handle_request(scope, replay, send)


def _refusal(body: bytes) -> tuple[int, dict[str, Any]] | None:
    """(HTTP status, JSON-RPC error) for a body that is not JSON-RPC, or a request with an
    unusable id, a method this server does not serve or params its method does not take;
    None for anything the protocol server should see."""
    try:
        message = serde.loads(body)
    except ValueError as exc:
        return 400, jsonrpc.error(None, types.PARSE_ERROR, f"Parse error: {exc}")
    if not isinstance(message, dict):
        what = "a batch (array)" if isinstance(message, list) else "not a JSON object"
        return 400, jsonrpc.error(None, types.INVALID_REQUEST, f"Invalid Request: {what}")
    request_id = message.get("id")
    method = message.get("method")
    if message.get("jsonrpc") != "2.0" or not (
        isinstance(method, str) or "result" in message or "error" in message
    ):
        detail = 'Invalid Request: send {"jsonrpc": "2.0", "method": …, "id": …}'
        return 400, jsonrpc.error(request_id, types.INVALID_REQUEST, detail)
    if not isinstance(method, str) or "id" not in message:
        return None  # a notification, or a response: the protocol server's
    if not jsonrpc.is_request_id(request_id):
        shown = serde.dumps(request_id).decode()
        detail = f"Invalid Request: id must be a string or an integer, not {shown}"
        return 400, jsonrpc.error(None, types.INVALID_REQUEST, detail)
    request_type = SERVED_METHODS.get(method)
    if request_type is None:
        detail = (
            f"Method not found: {method} — this server answers {', '.join(sorted(SERVED_METHODS))}"
        )
        return 200, jsonrpc.error(request_id, types.METHOD_NOT_FOUND, detail)
    try:
        request_type.model_validate({k: v for k, v in message.items() if k in ("method", "params")})
    except ValidationError as exc:
        detail = f"Invalid params: {jsonrpc.problems(exc)}"
        return 200, jsonrpc.error(request_id, types.INVALID_PARAMS, detail)
    return None


async def _send_json(send: Send, status: int, content: Any) -> None:
    body = serde.dumps(content)
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    endpoint = McpEndpoint(app.state.server)
    app.state.mcp = endpoint
    async with endpoint.running():
        yield


class _AppEndpoint:
    """The route's ASGI app (an object, so Starlette passes it the raw ASGI call): the
    `McpEndpoint` of the application serving the request."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint: McpEndpoint | None = getattr(scope["app"].state, "mcp", None)
        if endpoint is None:  # the application's lifespan did not run
            await _send_json(send, 503, {"detail": "the MCP endpoint is not running"})
            return
        await endpoint(scope, receive, send)


router = APIRouter(tags=["mcp"], lifespan=_lifespan)
router.routes.append(Route("/mcp", _AppEndpoint(), methods=["POST"], include_in_schema=False))
