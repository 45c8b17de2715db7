"""Tools of user-owned MCP servers (`"oauth"` in mcp.json): each call is made as the run's
user, with that user's own token.

Such tools cannot be listed when a revision loads (listing needs a user's token), so a
middleware offers them at each model call (`awrap_model_call`): the tools the server listed
for the first user who connected (its catalog, kept by the server and cached here for at
most `CATALOG_TTL` seconds), or, before anyone connected, one tool `connect_<server>`. It
also runs them (`awrap_tool_call`): a call of user U gets a fresh access token of U
(`UserConnections.access_token`) and opens its own MCP session with it as
`Authorization: Bearer` — the token lives in that call's headers only, never in the graph's
state, a message, an event or a log. Without a token the call pauses the run with the
consent request (a langgraph interrupt whose value says where to connect); once U connected,
the server resumes the run and the call is made again, as U. A 401 from the server gets one
refreshed token and one retry. A run with no signed-in user gets a tool error saying why.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any, Protocol

import httpx
from langchain.agents.middleware import AgentMiddleware
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.types import interrupt

from agentctl.project.mcp import expand
from agentctl.project.model import McpServer
from agentctl.runtime import memory

log = logging.getLogger("agentctl.runtime")

CATALOG_TTL = 60.0  # seconds a catalog read from the store is used before it is read again
CALL_TIMEOUT = httpx.Timeout(30.0, read=300.0)
CONNECTION_REQUIRED = "connection_required"


class UserConnections(Protocol):
    """What the runtime needs of the server's connections (`agentctl.connections`)."""

    async def access_token(self, user_id: str, server: str) -> str | None:
        """A valid access token of `user_id` for `server` (refreshed when it is about to
        expire), or None when the user must (again) consent."""
        ...

    async def invalidate(self, user_id: str, server: str) -> None:
        """The token the server refused: the next `access_token` refreshes it."""
        ...

    async def consent_request(
        self, user_id: str, server: str, *, thread_id: str | None, assistant_id: str | None
    ) -> dict[str, Any]:
        """A new consent flow of `user_id` for `server`, as the interrupt's value (its
        `type` is "connection_required"; it carries the authorization URL)."""
        ...

    async def catalog(self, server: str) -> list[dict[str, Any]] | None:
        """The tools `server` listed (MCP tool objects), None before anyone connected."""
        ...

    async def list_tools(self, user_id: str, server: str) -> list[dict[str, Any]]:
        """List `server`'s tools as `user_id` and keep them as its catalog."""
        ...


class Unauthorized(Exception):
    """The MCP server answered 401: the token was refused."""


class UserTools(AgentMiddleware):  # type: ignore[misc]
    """Offers and runs the tools of `servers` (user-owned) as the run's user."""

    def __init__(
        self, servers: Sequence[McpServer], env: Mapping[str, str], connections: UserConnections
    ) -> None:
        super().__init__()
        self._servers = {server.name: server for server in servers}
        self._env = env
        self._connections = connections
        # server -> (when read, its tools); missing: read the store at the next model call
        self._catalogs: dict[str, tuple[float, list[BaseTool]]] = {}
        self._offered: dict[str, tuple[str, BaseTool]] = {}  # tool name -> (server, tool)

    # -- offering ------------------------------------------------------------------------

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        taken = {_name(tool) for tool in request.tools}
        added = [tool for tool in await self.tools() if tool.name not in taken]
        if not added:
            return await handler(request)
        return await handler(request.override(tools=[*request.tools, *added]))

    async def tools(self) -> list[BaseTool]:
        """Every tool offered now: each server's catalog, or its `connect_<server>`."""
        offered: list[BaseTool] = []
        for name in self._servers:
            offered += await self._server_tools(name)
        return offered

    async def _server_tools(self, server: str) -> list[BaseTool]:
        cached = self._catalogs.get(server)
        if cached is not None and time.monotonic() - cached[0] < CATALOG_TTL:
            return cached[1]
        listed = await self._connections.catalog(server)
        if listed is None:
            tools = [self._connect_tool(server)]
        else:
            tools = [self._catalog_tool(server, entry) for entry in listed if entry.get("name")]
            self._catalogs[server] = (time.monotonic(), tools)
        for tool in tools:
            self._offered[tool.name] = (server, tool)
        return tools

    def _catalog_tool(self, server: str, entry: Mapping[str, Any]) -> BaseTool:
        name = str(entry["name"])

        async def run(**arguments: Any) -> Any:
            return await self.call(server, name, arguments)

        return StructuredTool(
            name=name,
            description=str(entry.get("description") or f"{name} (from {server})"),
            args_schema=dict(entry.get("inputSchema") or {"type": "object", "properties": {}}),
            coroutine=run,
            handle_tool_error=True,
            metadata={"mcp_server": server, "user_owned": True},
        )

    def _connect_tool(self, server: str) -> BaseTool:
        described = self._servers[server].description
        purpose = f" ({described})" if described else ""

        async def run() -> str:
            return await self.connect(server)

        return StructuredTool(
            name=f"connect_{server}",
            description=(
                f"Connect the user's own {server} account{purpose}, which no one has connected "
                f"yet: call it before anything that needs {server}; it answers the tools "
                f"{server} then offers, which you call next."
            ),
            args_schema={"type": "object", "properties": {}},
            coroutine=run,
            handle_tool_error=True,
            metadata={"mcp_server": server, "user_owned": True},
        )

    # -- running -------------------------------------------------------------------------

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        if request.tool is not None:
            return await handler(request)
        offered = self._offered.get(request.tool_call["name"])
        if offered is None:  # offered by another runtime of this revision: list them here
            await self.tools()
            offered = self._offered.get(request.tool_call["name"])
        if offered is None:
            return await handler(request)  # the tool node answers an unknown tool
        return await handler(request.override(tool=offered[1]))

    async def connect(self, server: str) -> str:
        """`connect_<server>`: the user connects (consent when needed), then the server's
        tools are listed as them into the catalog."""
        user = await self._token_of(server)
        tools = await self._connections.list_tools(user[0], server)
        self._catalogs.pop(server, None)
        names = ", ".join(str(tool.get("name")) for tool in tools) or "none"
        return f"{server} is connected; its tools (call them next): {names}"

    async def call(self, server: str, tool: str, arguments: Mapping[str, Any]) -> Any:
        """Call `tool` of `server` as the run's user (see the module's docstring)."""
        user, token = await self._token_of(server)
        url, transport = self._url(server), self._servers[server].transport
        try:
            return await call_tool(url, transport, token, tool, arguments)
        except Unauthorized:
            await self._connections.invalidate(user, server)
        user, token = await self._token_of(server)
        try:
            return await call_tool(url, transport, token, tool, arguments)
        except Unauthorized:
            await self._connections.invalidate(user, server)
            raise ToolException(
                f"{server} refused the connection of this user even after a refresh — "
                f"call the tool again to connect {server} anew"
            ) from None

    async def _token_of(self, server: str) -> tuple[str, str]:
        """The run's user and their token for `server`; without one, the run waits for
        them to connect (interrupt) and the token is read again when it resumes."""
        user = memory.current_user_id()
        if user is None:
            who = "the deployment key" if memory.current_is_operator() else "no signed-in user"
            raise ToolException(
                f"{server} acts as the signed-in user, and this run has none (it was started "
                f"with {who}): call the agent with a user's token (Authorization: Bearer) to "
                f"use {server}"
            )
        token = await self._connections.access_token(user, server)
        if token is not None:
            return user, token
        configurable = memory.configurable()
        value = await self._connections.consent_request(
            user,
            server,
            thread_id=_text(configurable.get("thread_id")),
            assistant_id=_text(configurable.get("assistant_id")),
        )
        interrupt(value)  # on resume, returns; the token is read again
        token = await self._connections.access_token(user, server)
        if token is None:
            raise ToolException(
                f"{server} is not connected for this user yet — open the link of the "
                "connection request, sign in, then call the tool again"
            )
        return user, token

    def _url(self, server: str) -> str:
        return expand(self._servers[server].url, self._env)


async def call_tool(
    url: str, transport: str, token: str, tool: str, arguments: Mapping[str, Any]
) -> Any:
    """Call `tool` on the MCP server at `url` with `token`, in a session of its own."""

    async def called(session: Any) -> Any:
        return await session.call_tool(tool, dict(arguments))

    result = await _session_call(url, transport, token, called)
    text = _text_of(result.content)
    if result.isError:
        raise ToolException(text or f"{tool} failed")
    if result.structuredContent is not None and not text:
        return result.structuredContent
    return text


async def list_tools(url: str, transport: str, token: str) -> list[dict[str, Any]]:
    """The MCP tools of the server at `url` as `token`'s user sees them (tool objects)."""

    async def listed(session: Any) -> Any:
        return await session.list_tools()

    result = await _session_call(url, transport, token, listed)
    return [tool.model_dump(mode="json", exclude_none=True) for tool in result.tools]


async def _session_call(
    url: str, transport: str, token: str, action: Callable[[Any], Awaitable[Any]]
) -> Any:
    from mcp import ClientSession
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    refused = False

    async def seen(response: httpx.Response) -> None:
        nonlocal refused
        refused = refused or response.status_code == 401

    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with AsyncExitStack() as stack:
            if transport == "sse":
                read, write = await stack.enter_async_context(
                    sse_client(url, headers=headers, timeout=30, sse_read_timeout=300)
                )
            else:
                client = await stack.enter_async_context(
                    httpx.AsyncClient(
                        headers=headers, timeout=CALL_TIMEOUT, event_hooks={"response": [seen]}
                    )
                )
                read, write, _ = await stack.enter_async_context(
                    streamable_http_client(url, http_client=client)
                )
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            return await action(session)
    except Exception as exc:
        if refused or _is_401(exc):
            raise Unauthorized() from None
        if isinstance(exc, ToolException):
            raise
        raise ToolException(f"the MCP server could not be called: {_reason(exc)}") from None


def _is_401(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return any(_is_401(inner) for inner in exc.exceptions)
    return isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code == 401


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(_reason(inner) for inner in exc.exceptions))
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")


def _text_of(content: Sequence[Any]) -> str:
    parts = []
    for part in content:
        text = getattr(part, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(part, 'type', 'content')}]")
    return "\n".join(parts)


def _name(tool: Any) -> str:
    if isinstance(tool, BaseTool):
        return str(tool.name)
    if isinstance(tool, dict):
        return str(tool.get("name") or tool.get("function", {}).get("name") or "")
    return str(getattr(tool, "name", ""))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
