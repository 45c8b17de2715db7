"""A user-owned MCP server on the SSE transport (`"transport": "sse"`): discovered, connected
and called as the user the same way, its 401 telling a refused token."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp import FastMCP
from pydantic import AnyHttpUrl
from starlette.applications import Starlette

from agentctl.connections import Connections, TokenBox
from agentctl.connections.mcp_client import Unauthorized, list_tools
from agentctl.project.model import McpOAuth, McpServer
from agentctl.storage.base import ConnectionStore
from agentctl.testing.oauth_provider import OAuthProvider
from agentctl.testing.oauth_resource import IntrospectionVerifier
from agentctl.testing.serving import serve_built
from tests.connections.test_connections import CALLBACK, connect, text


class SseNotes:
    """The provider's authorization server, and a `whoami` MCP server on SSE it protects."""

    def __init__(self) -> None:
        self.provider = OAuthProvider()
        self.url = ""

    def app(self, port: int) -> Starlette:
        self.url = f"http://127.0.0.1:{port}/sse"
        server = FastMCP(
            "sse-notes",
            log_level="WARNING",
            token_verifier=IntrospectionVerifier(
                f"{self.provider.issuer}/introspect", self.provider.auth.introspection_client
            ),
            auth=AuthSettings(
                issuer_url=AnyHttpUrl(self.provider.issuer),
                resource_server_url=AnyHttpUrl(self.url),
                required_scopes=["notes.read"],
                validate_token_resource=True,
            ),
        )

        @server.tool()
        def whoami() -> str:
            """The name of the user you are signed in as."""
            token = get_access_token()
            return "" if token is None else str(token.subject)

        return server.sse_app()


@pytest.fixture(scope="module")
def sse() -> Iterator[SseNotes]:
    served = SseNotes()
    with ExitStack() as stack:
        stack.enter_context(served.provider)
        stack.enter_context(serve_built(served.app))
        yield served


async def test_a_user_connects_an_sse_server_and_calls_it(
    sse: SseNotes, store: ConnectionStore
) -> None:
    server = McpServer(
        name="notes", transport="sse", url=sse.url, oauth=McpOAuth(scopes=("notes.read",))
    )
    vault = Connections(
        store, TokenBox(["k"]), {"notes": server}, {}, callback_url=CALLBACK, base_url="http://x"
    )
    try:
        async with httpx.AsyncClient(timeout=10) as browser:
            await connect(vault, sse.provider, browser, "carol")
        tools = await vault.list_tools("carol", "notes")
        assert tools is not None
        assert [tool["name"] for tool in tools] == ["whoami"]
        assert text(await vault.call_tool("carol", "notes", "whoami", {})) == "carol"
        with pytest.raises(Unauthorized):
            await list_tools(sse.url, "sse", {"Authorization": "Bearer forged"})
    finally:
        await vault.aclose()
