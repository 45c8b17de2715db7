"""Discovery walks the URLs of the MCP authorization spec (2025-11-25) in its order: the
resource metadata the 401 names, else the well-known URLs (path, then root); then the
authorization server's metadata by RFC 8414 and OpenID discovery, path-aware."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentctl.connections import oauth
from agentctl.errors import ConnectionFailed
from agentctl.testing.serving import serve_built


class Server:
    """An MCP server whose 401 names no resource metadata, and an authorization server at
    `<base>/tenant` answering OpenID discovery by path-appending only."""

    def __init__(self) -> None:
        self.base = ""
        self.asked: list[str] = []
        self.pkce = True

    def app(self, port: int) -> Starlette:
        self.base = f"http://127.0.0.1:{port}"

        async def anything(request: Request) -> Response:
            self.asked.append(request.url.path)
            path = request.url.path
            if path == "/mcp":
                return Response(status_code=401, headers={"WWW-Authenticate": "Bearer"})
            if path == "/.well-known/oauth-protected-resource/mcp":
                document: dict[str, Any] = {
                    "resource": f"{self.base}/mcp",
                    "authorization_servers": [f"{self.base}/tenant"],
                    "scopes_supported": ["read", "write"],
                }
                return JSONResponse(document)
            if path == "/tenant/.well-known/openid-configuration":
                document = {
                    "issuer": f"{self.base}/tenant",
                    "authorization_endpoint": f"{self.base}/tenant/authorize",
                    "token_endpoint": f"{self.base}/tenant/token",
                    "response_types_supported": ["code"],
                }
                if self.pkce:
                    document["code_challenge_methods_supported"] = ["S256"]
                return JSONResponse(document)
            return Response(status_code=404)

        return Starlette(routes=[Route("/{path:path}", anything, methods=["GET", "POST"])])


@pytest.fixture
def server() -> Iterator[Server]:
    served = Server()
    with serve_built(served.app):
        yield served


async def test_the_well_known_urls_are_tried_in_the_spec_order(server: Server) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        found = await oauth.discover(http, "notes", f"{server.base}/mcp")
    assert server.asked == [
        "/mcp",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server/tenant",
        "/.well-known/openid-configuration/tenant",
        "/tenant/.well-known/openid-configuration",
    ]
    assert found.issuer == f"{server.base}/tenant"
    assert found.token_endpoint == f"{server.base}/tenant/token"
    assert found.resource == f"{server.base}/mcp"
    assert found.scopes == "read write"  # what the resource metadata lists


async def test_scopes_of_mcp_json_win_and_pkce_is_required(server: Server) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        found = await oauth.discover(http, "notes", f"{server.base}/mcp", scopes=("read",))
        assert found.scopes == "read"
        server.pkce = False
        with pytest.raises(ConnectionFailed, match="PKCE with S256"):
            await oauth.discover(http, "notes", f"{server.base}/mcp")
