"""A real MCP server protected by OAuth (an RFC 9728 resource server), built with the `mcp` SDK.

`notes_app(...)` is a FastMCP server at ``<base>/mcp`` (streamable HTTP) whose tools act as
the user the bearer token belongs to: `whoami`, `my_notes` and `add_note(text)` (which needs the
``notes.write`` scope when the provider has it). Tokens are checked by the authorization
server's introspection endpoint (RFC 7662, over HTTP); a request without a valid token for
this resource gets 401 with ``WWW-Authenticate: Bearer ... resource_metadata="<base>/.well-known/
oauth-protected-resource/mcp"``, where the protected resource metadata is served.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

__all__ = ["WRITE_SCOPE", "IntrospectionVerifier", "notes_app"]

WRITE_SCOPE = "notes.write"


class IntrospectionVerifier(TokenVerifier):
    """Asks the authorization server about each bearer token (RFC 7662)."""

    def __init__(self, url: str, client: tuple[str, str]) -> None:
        self.url = url
        self.client = client

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            async with httpx.AsyncClient(timeout=10) as http:
                response = await http.post(self.url, data={"token": token}, auth=self.client)
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        answer = response.json()
        if not answer.get("active"):
            return None
        return AccessToken(
            token=token,
            client_id=str(answer.get("client_id", "")),
            scopes=str(answer.get("scope", "")).split(),
            expires_at=answer.get("exp"),
            resource=answer.get("aud"),
            subject=answer.get("sub"),
            claims={"iss": answer.get("iss")},
        )


def notes_app(
    *,
    mcp_url: str,
    issuer: str,
    verifier: TokenVerifier,
    notes: dict[str, list[str]],
    scopes: list[str],
    required_scopes: list[str],
) -> Starlette:
    """The notes MCP server's ASGI app, served at `mcp_url` (its resource identifier), trusting
    tokens of `issuer` that `verifier` accepts and that carry `required_scopes`; `notes`
    (user -> notes) is read and written in place. Its metadata lists `scopes`."""
    auth = AuthSettings(
        issuer_url=AnyHttpUrl(issuer),
        resource_server_url=AnyHttpUrl(mcp_url),
        required_scopes=required_scopes,
        validate_token_resource=True,
    )
    server = FastMCP(
        "notes",
        instructions="Your notes: see who you are signed in as, read and add notes.",
        stateless_http=True,
        json_response=True,
        log_level="WARNING",
        token_verifier=verifier,
        auth=auth,
    )

    def user() -> str:
        token = get_access_token()
        if token is None or not token.subject:  # the auth middleware lets none through
            raise ToolError("no signed-in user")
        return token.subject

    @server.tool()
    def whoami() -> str:
        """The name of the user you are signed in as."""
        return user()

    @server.tool()
    def my_notes() -> list[str]:
        """Your notes, oldest first."""
        return list(notes.get(user(), []))

    @server.tool()
    def add_note(text: str) -> str:
        """Add a note to your notes."""
        token = get_access_token()
        if WRITE_SCOPE in scopes and (token is None or WRITE_SCOPE not in token.scopes):
            raise ToolError(f"add_note needs the {WRITE_SCOPE} scope; connect again asking for it")
        mine = notes.setdefault(user(), [])
        mine.append(text)
        return f"added note {len(mine)}"

    app = server.streamable_http_app()
    # RFC 9728 metadata naming the issuer and resource exactly as given (the SDK's adds a "/"
    # to a root issuer) and every scope the provider offers, not only the required ones
    metadata = {
        "resource": mcp_url,
        "authorization_servers": [issuer],
        "scopes_supported": scopes,
        "bearer_methods_supported": ["header"],
        "resource_name": "Loopback notes",
    }

    async def protected_resource(request: Request) -> JSONResponse:
        return JSONResponse(metadata, headers={"Access-Control-Allow-Origin": "*"})

    path = urlsplit(str(build_resource_metadata_url(AnyHttpUrl(mcp_url)))).path
    app.router.routes[:] = [
        route for route in app.router.routes if getattr(route, "path", "") != path
    ]
    app.router.routes.append(Route(path, protected_resource, methods=["GET"]))
    return app
