"""Tools of remote MCP servers, loaded once per revision; an unreachable server is an error.

User-owned servers (`oauth` in mcp.json) are not listed here: that needs a user's token, so
their tools are offered per run, for the run's user.

With tracing on, each tool call is a client span `tools/call {tool}` whose trace context goes
to the server in the call's `traceparent` header (an agent of the platform, called
in-process, continues the trace in its own spans)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, quote_plus

from langchain_core.tools import ToolException

from agentctl.errors import McpLoadError
from agentctl.observability import tracing
from agentctl.project.mcp import expand
from agentctl.project.model import McpServer
from agentctl.runtime.metering import MCP_SERVER
from agentctl.runtime.peers import AgentConnector, PeerRefused


async def load_mcp_tools(
    servers: Sequence[McpServer], env: Mapping[str, str], agents: AgentConnector | None = None
) -> list[Any]:
    """Every tool of every server, in order. Each server is listed on its own, so the error
    names the one that failed (with its url as written, never with expanded secrets).

    `agents`: connects to the platform's other agents, which a server naming an agent is
    called through (in-process); without it (`agentctl dev`), such a server is reached at
    its `url`."""
    servers = [server for server in servers if not server.user_owned]
    if not servers:
        return []
    from langchain_mcp_adapters.client import MultiServerMCPClient

    connections = {server.name: _connection(server, env, agents) for server in servers}
    # Where each server is, for its spans (an agent called in-process is at no address).
    urls = {name: None if "httpx_client_factory" in c else c.get("url")
            for name, c in connections.items()}  # fmt: skip
    client = MultiServerMCPClient(
        connections,
        tool_name_prefix=False,
        handle_tool_errors=True,
        tool_interceptors=[_Traced(urls)],
    )
    tools: list[Any] = []
    offered_by: dict[str, str] = {}
    for server in servers:
        try:
            listed = await client.get_tools(server_name=server.name)
        except Exception as exc:
            reason = _redact(_reason(exc), [env[name] for name in server.env_names])
            raise McpLoadError(
                f"MCP server {_named(server)} could not be listed: {reason}"
                " — check that it is running and reachable, and its url and headers in mcp.json"
            ) from None
        if not listed:
            raise McpLoadError(
                f"MCP server {_named(server)} offers no tools — remove it from "
                "mcp.json or check the server"
            )
        for tool in listed:
            if tool.name in offered_by:
                raise McpLoadError(
                    f'tool "{tool.name}" is offered by both MCP servers "{offered_by[tool.name]}"'
                    f' and "{server.name}" — remove one of them'
                )
            offered_by[tool.name] = server.name
            # Its calls are metered as this server's (`runtime.metering`).
            tool.metadata = {**(tool.metadata or {}), MCP_SERVER: server.name}
            if server.agent is not None:
                tool.metadata["agent"] = server.agent
            if server.agent is not None and agents is not None:
                tool.handle_tool_error = _also_refusals(tool.handle_tool_error)
        tools += listed
    return tools


def _connection(
    server: McpServer, env: Mapping[str, str], agents: AgentConnector | None
) -> dict[str, Any]:
    if server.agent is not None and agents is not None:
        return agents(server.agent)
    if not server.url:
        raise McpLoadError(
            f'MCP server "{server.name}" names agent "{server.agent}", which is called '
            "in-process only on the platform that serves both (agentctl serve) — to reach "
            'it from here, add its "url" (and "headers") to mcp.json'
        )
    return {
        "transport": "streamable_http" if server.transport == "http" else "sse",
        "url": expand(server.url, env),
        "headers": {name: expand(value, env) for name, value in server.headers.items()},
    }


class _Traced:
    """A tool call's client span, its trace context sent in the call's headers."""

    def __init__(self, urls: Mapping[str, str | None]) -> None:
        self.urls = urls

    async def __call__(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        if not tracing.tracing_enabled():
            return await handler(request)
        server = request.server_name
        url = self.urls.get(server)
        with tracing.mcp_client_span("tools/call", request.name, url, server) as call:
            result = await handler(request.override(headers={**(request.headers or {}),
                                                             **call.headers}))  # fmt: skip
            if getattr(result, "isError", False):
                call.failed()
            return result


def _also_refusals(handler: Any) -> Callable[[ToolException], Any]:
    """The tool's error handler, which also shows the model a call the called agent would
    not admit (`PeerRefused`), rather than failing the run."""

    def handle(error: ToolException) -> Any:
        if isinstance(error, PeerRefused):
            return str(error)
        return handler(error)

    return handle


def _named(server: McpServer) -> str:
    """The server as an error names it: its name and where it is, as written."""
    return f'"{server.name}" ({server.url or "agent " + str(server.agent)})'


def _redact(text: str, secrets: Sequence[str]) -> str:
    """`text` without any of the expanded values, raw or as they appear inside a URL."""
    for secret in secrets:
        for form in {secret, quote(secret), quote(secret, safe=""), quote_plus(secret)}:
            if len(form) >= 3:
                text = text.replace(form, "***")
    return text


def _reason(exc: BaseException) -> str:
    """The innermost causes of an error, without exception-group noise."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(_reason(inner) for inner in exc.exceptions))
    text = str(exc).split("\n")[0] or type(exc).__name__
    return f"{type(exc).__name__}: {text}"
