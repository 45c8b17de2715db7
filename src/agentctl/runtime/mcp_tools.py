"""Tools of remote MCP servers, loaded once per revision; an unreachable server is an error."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, quote_plus

from agentctl.errors import McpLoadError
from agentctl.project.mcp import expand
from agentctl.project.model import McpServer


async def load_mcp_tools(servers: Sequence[McpServer], env: Mapping[str, str]) -> list[Any]:
    """Every tool of every server, in order. Each server is listed on its own, so the error
    names the one that failed (with its url as written, never with expanded secrets)."""
    if not servers:
        return []
    from langchain_mcp_adapters.client import MultiServerMCPClient

    connections: dict[str, Any] = {
        server.name: {
            "transport": "streamable_http" if server.transport == "http" else "sse",
            "url": expand(server.url, env),
            "headers": {name: expand(value, env) for name, value in server.headers.items()},
        }
        for server in servers
    }
    client = MultiServerMCPClient(connections, tool_name_prefix=False, handle_tool_errors=True)
    tools: list[Any] = []
    offered_by: dict[str, str] = {}
    for server in servers:
        try:
            listed = await client.get_tools(server_name=server.name)
        except Exception as exc:
            reason = _redact(_reason(exc), [env[name] for name in server.env_names])
            raise McpLoadError(
                f'MCP server "{server.name}" ({server.url}) could not be listed: {reason}'
                " — check that it is running and reachable, and its url and headers in mcp.json"
            ) from None
        if not listed:
            raise McpLoadError(
                f'MCP server "{server.name}" ({server.url}) offers no tools — remove it from '
                "mcp.json or check the server"
            )
        for tool in listed:
            if tool.name in offered_by:
                raise McpLoadError(
                    f'tool "{tool.name}" is offered by both MCP servers "{offered_by[tool.name]}"'
                    f' and "{server.name}" — remove one of them'
                )
            offered_by[tool.name] = server.name
        tools += listed
    return tools


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
