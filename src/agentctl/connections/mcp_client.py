"""Calls to a user-owned MCP server with a user's token, through the official `mcp` client
(streamable HTTP or SSE). A 401 from the server is `Unauthorized`: the caller refreshes the
token and tries once more."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any, TypeVar

import anyio
import httpx
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agentctl.errors import ConnectionFailed

T = TypeVar("T")
TIMEOUT = 30.0  # seconds for a whole exchange: connect, initialize, the request

__all__ = ["Unauthorized", "call_tool", "list_tools"]


class Unauthorized(Exception):
    """The MCP server answered 401 to the token."""


async def list_tools(url: str, transport: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    """Every tool the server lists (every page), as JSON."""

    async def listed(session: ClientSession) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = await session.list_tools(cursor)
            tools += [t.model_dump(mode="json", exclude_none=True) for t in page.tools]
            cursor = page.nextCursor
            if not cursor:
                return tools

    return await _session(url, transport, headers, listed, "listing its tools")


async def call_tool(
    url: str, transport: str, headers: dict[str, str], tool: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    """The result of `tool` called with `arguments`, as JSON (`isError` says a failure)."""

    async def called(session: ClientSession) -> dict[str, Any]:
        result = await session.call_tool(tool, arguments)
        return result.model_dump(mode="json", exclude_none=True)

    return await _session(url, transport, headers, called, f"calling its tool {tool}")


async def _session(
    url: str,
    transport: str,
    headers: dict[str, str],
    action: Callable[[ClientSession], Awaitable[T]],
    what: str,
) -> T:
    refused = False
    with anyio.CancelScope() as scope:

        async def on_response(response: httpx.Response) -> None:
            nonlocal refused
            if response.status_code == 401:  # the session would only time out: stop it now
                refused = True
                scope.cancel()

        try:
            with anyio.fail_after(TIMEOUT):
                async with (
                    _streams(url, transport, headers, on_response) as (read, write),
                    ClientSession(
                        read, write, read_timeout_seconds=timedelta(seconds=TIMEOUT)
                    ) as session,
                ):
                    await session.initialize()
                    return await action(session)
        except Exception as exc:
            if not refused:
                raise ConnectionFailed(
                    f"the MCP server at {url} failed {what}: {_reason(exc)}"
                ) from None
    raise Unauthorized


@asynccontextmanager
async def _streams(
    url: str,
    transport: str,
    headers: dict[str, str],
    on_response: Callable[[httpx.Response], Awaitable[None]],
) -> AsyncIterator[tuple[Any, Any]]:
    hooks = {"response": [on_response]}
    if transport == "sse":

        def factory(
            headers: dict[str, str] | None = None,
            timeout: httpx.Timeout | None = None,
            auth: httpx.Auth | None = None,
        ) -> httpx.AsyncClient:
            client = create_mcp_http_client(headers, timeout, auth)
            client.event_hooks = hooks
            return client

        async with sse_client(url, headers, httpx_client_factory=factory) as (read, write):
            yield read, write
        return
    client = create_mcp_http_client(headers, httpx.Timeout(TIMEOUT))
    client.event_hooks = hooks
    async with client, streamable_http_client(url, http_client=client) as (read, write, _):
        yield read, write


def _reason(exc: BaseException) -> str:
    """The innermost causes of an error, without exception-group noise (and never the
    request's headers: httpx does not put them in its messages)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(_reason(inner) for inner in exc.exceptions))
    if isinstance(exc, TimeoutError):
        return f"no answer within {TIMEOUT:g} s"
    text = str(exc).split("\n")[0] or type(exc).__name__
    return f"{type(exc).__name__}: {text}"
