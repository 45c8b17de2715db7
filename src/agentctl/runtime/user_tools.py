"""Tools of user-owned MCP servers (`"oauth"` in mcp.json): each call is made as the run's
user, with that user's own token.

Such tools cannot be listed when a revision loads (listing needs a user's token), so a
middleware offers them at each model call (`awrap_model_call`): the tools the server last
listed to a user (its catalog, kept in the agent's storage and cached here for at most
`CATALOG_TTL` seconds), or, before anyone connected, one tool `connect_<server>`. It
also runs them (`awrap_tool_call`): a call of user U is made by the agent's connections
(`agentctl.connections`) with a fresh access token of U in the headers of an MCP session of
its own — the token never enters the graph's state, a message, an event or a log. When U
has no connection the call pauses the run with the consent request (a langgraph interrupt
whose value says where to connect); once U connected, the server resumes the run and the
call is made again, as U. A run with no signed-in user gets a tool error saying why.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from langchain.agents.middleware import AgentMiddleware
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.types import interrupt

from agentctl.connections import ConsentRequest, consent_value
from agentctl.project.model import McpServer, Project
from agentctl.runtime import memory
from agentctl.storage.base import ConnectionStore

CATALOG_TTL = 60.0  # seconds a catalog read from the store is used before it is read again
T = TypeVar("T")


class UserConnections(Protocol):
    """What the runtime needs of the agent's connections (`agentctl.connections.Connections`,
    which the server gives `load_agent`)."""

    store: ConnectionStore

    async def call_tool(
        self, user_id: str, server: str, tool: str, arguments: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The MCP result (JSON) of `tool` called as `user_id`; None: not connected."""
        ...

    async def list_tools(self, user_id: str, server: str) -> list[dict[str, Any]] | None:
        """The tools `server` lists to `user_id`, kept as its catalog; None: not connected."""
        ...

    async def begin(
        self, user_id: str, server: str, *, thread_id: str | None, assistant_id: str | None
    ) -> ConsentRequest:
        """A new consent flow of `user_id` for `server`."""
        ...


class ConnectionsSource(Protocol):
    """Where a revision's connections come from (the server's `ConnectionsFactory`)."""

    def of(self, project: Project) -> UserConnections | None:
        """The connections of `project`, None when it has no user-owned server."""
        ...


class UserTools(AgentMiddleware):  # type: ignore[misc]
    """Offers and runs the tools of `servers` (user-owned) as the run's user."""

    def __init__(self, servers: Sequence[McpServer], connections: UserConnections) -> None:
        super().__init__()
        self._servers = {server.name: server for server in servers}
        self._connections = connections
        # server -> (when read, its tools); missing: read the store at the next model call
        self._catalogs: dict[str, tuple[float, list[BaseTool]]] = {}
        self._offered: dict[str, tuple[str, BaseTool]] = {}  # tool name -> (server, tool)

    # -- offering ------------------------------------------------------------------------

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        taken = {_name(tool) for tool in request.tools}
        added = [tool for tool in await self.offered() if tool.name not in taken]
        if not added:
            return await handler(request)
        return await handler(request.override(tools=[*request.tools, *added]))

    async def offered(self) -> list[BaseTool]:
        """Every tool offered now: each server's catalog, or its `connect_<server>`."""
        offered: list[BaseTool] = []
        for name in self._servers:
            offered += await self._server_tools(name)
        return offered

    async def _server_tools(self, server: str) -> list[BaseTool]:
        cached = self._catalogs.get(server)
        if cached is not None and time.monotonic() - cached[0] < CATALOG_TTL:
            return cached[1]
        listed = await self._connections.store.get_catalog(server)
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
        if offered is None:  # offered before this middleware listed it (e.g. on a retry)
            await self.offered()
            offered = self._offered.get(request.tool_call["name"])
        if offered is None:
            return await handler(request)  # the tool node answers an unknown tool
        return await handler(request.override(tool=offered[1]))

    async def connect(self, server: str) -> str:
        """`connect_<server>`: the user connects (consent when needed), then the server's
        tools are listed as them into the catalog."""
        tools = await self._as_user(server, self._connections.list_tools)
        self._catalogs.pop(server, None)
        names = ", ".join(str(tool.get("name")) for tool in tools) or "none"
        return f"{server} is connected; its tools (call them next): {names}"

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        """Call `tool` of `server` as the run's user (see the module's docstring)."""

        async def called(user: str, name: str) -> dict[str, Any] | None:
            return await self._connections.call_tool(user, name, tool, arguments)

        return _result(tool, await self._as_user(server, called))

    async def _as_user(self, server: str, action: Callable[[str, str], Awaitable[T | None]]) -> T:
        """`action(user, server)` as the run's user. None from it means the user has no
        connection: the run waits for them to connect (interrupt), then tries again."""
        user = memory.current_user_id()
        if user is None:
            who = "the deployment key" if memory.current_is_operator() else "no signed-in user"
            raise ToolException(
                f"{server} acts as the signed-in user, and this run has none (it was started "
                f"with {who}): call the agent with a user's token (Authorization: Bearer) to "
                f"use {server}"
            )
        done = await _checked(server, action(user, server))
        if done is not None:
            return done
        configurable = memory.configurable()
        request = await self._connections.begin(
            user,
            server,
            thread_id=_text(configurable.get("thread_id")),
            assistant_id=_text(configurable.get("assistant_id")),
        )
        interrupt(consent_value(request, self._servers[server].description))
        # Resumed: the user connected (or answered anything): try again, once.
        done = await _checked(server, action(user, server))
        if done is None:
            raise ToolException(
                f"{server} is not connected for this user — open the link of the connection "
                "request, sign in, then ask again"
            )
        return done


async def _checked(server: str, pending: Awaitable[T]) -> T:
    """What `pending` gives; its failure (the server or its provider down, a refusal) is a
    tool error the model sees, not the run's end."""
    try:
        return await pending
    except ToolException:
        raise
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ToolException(f"{server} could not be used: {reason}") from None


def _result(tool: str, result: Mapping[str, Any]) -> Any:
    """What the model sees of an MCP tool result: its text, else its structured content;
    an error result is a tool error."""
    text = _text_of(result.get("content") or [])
    if result.get("isError"):
        raise ToolException(text or f"{tool} failed")
    structured = result.get("structuredContent")
    if structured is not None and not text:
        return structured
    return text


def _text_of(content: Sequence[Any]) -> str:
    parts = []
    for part in content:
        text = part.get("text") if isinstance(part, dict) else None
        kind = part.get("type") if isinstance(part, dict) else None
        parts.append(text if isinstance(text, str) else f"[{kind or 'content'}]")
    return "\n".join(parts)


def _name(tool: Any) -> str:
    if isinstance(tool, BaseTool):
        return str(tool.name)
    if isinstance(tool, dict):
        return str(tool.get("name") or tool.get("function", {}).get("name") or "")
    return str(getattr(tool, "name", ""))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
