"""The OAuth 2.1 side of a user's connection to an MCP server, as the MCP authorization spec
(2025-06-18, 2025-11-25) has a client do it, built on the `mcp` SDK's client auth parts
(discovery URLs and responses, metadata models, registration, PKCE, client authentication):

- discovery: the MCP server's 401 names its protected resource metadata (`WWW-Authenticate:
  ... resource_metadata=`, RFC 9728), else the well-known URLs (path, then root); that names
  the authorization server, whose metadata is read from RFC 8414 then OpenID discovery URLs;
- the client: registered dynamically (RFC 7591) or configured (`oauth.client_id`);
- the authorization code grant with PKCE S256, `state`, `resource` (RFC 8707) and scopes;
  refresh; revocation (RFC 7009) when the authorization server offers it.

Every failure is a `ConnectionFailed` naming the server, the URL and the step — never a
token, a code or a client secret.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast
from urllib.parse import urlparse

import httpx
from mcp.client.auth import OAuthFlowError, PKCEParameters
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_client_registration_request,
    create_oauth_metadata_request,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    get_client_metadata_scopes,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    handle_registration_response,
    validate_metadata_issuer,
)
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
from mcp.types import LATEST_PROTOCOL_VERSION
from pydantic import AnyUrl, ValidationError

from agentctl.errors import ConnectionFailed, ConsentRefused

TIMEOUT = httpx.Timeout(10.0)
GRANTS = ["authorization_code", "refresh_token"]

__all__ = [
    "AuthServer",
    "GrantRefused",
    "PKCEParameters",
    "Tokens",
    "authorization_url",
    "client_info",
    "discover",
    "exchange",
    "refresh",
    "register",
    "revoke",
    "short",
]


class GrantRefused(Exception):
    """The authorization server refused a refresh for good: the grant (`invalid_grant`:
    revoked, expired) or the client it was issued to (`invalid_client`,
    `unauthorized_client`). The user must consent again."""


# The token endpoint's errors that end a refresh token for good (RFC 6749 5.2).
REFRESH_REFUSALS = ("invalid_grant", "invalid_client", "unauthorized_client")


@dataclass(frozen=True)
class AuthServer:
    """What discovery found for one MCP server: its authorization server and how to ask it."""

    issuer: str
    metadata: OAuthMetadata
    resource: str  # the `resource` of every authorization and token request (RFC 8707)
    scopes: str | None  # the scopes to ask for (space-separated), None: the server's default

    @property
    def token_endpoint(self) -> str:
        return str(self.metadata.token_endpoint)

    @property
    def revocation_endpoint(self) -> str | None:
        endpoint = self.metadata.revocation_endpoint
        return None if endpoint is None else str(endpoint)

    @property
    def revocation_methods(self) -> list[str] | None:
        return self.metadata.revocation_endpoint_auth_methods_supported


@dataclass(frozen=True)
class Tokens:
    """A token set: what a connection seals."""

    access_token: str
    refresh_token: str | None
    token_type: str
    scope: str | None
    expires_at: float | None  # epoch seconds; None: not said

    def fields(self) -> dict[str, Any]:
        """What a connection's sealed token set keeps of them, and when they were issued."""
        return {
            "issued_at": time.time(),
            "access_token": self.access_token,
            "refresh_token": self.refresh_token,
            "token_type": self.token_type,
            "scope": self.scope,
            "expires_at": self.expires_at,
        }

    @property
    def expiry(self) -> datetime | None:
        """When the access token expires (None: not said)."""
        return None if self.expires_at is None else datetime.fromtimestamp(self.expires_at, UTC)

    def granted(self, asked: tuple[str, ...]) -> tuple[str, ...]:
        """The scopes granted: those the answer names, else those `asked` for."""
        return tuple(self.scope.split()) if self.scope else asked

    @classmethod
    def of(cls, token: OAuthToken, *, previous_refresh: str | None = None) -> Tokens:
        """`previous_refresh`: kept when a refresh answers no new refresh token."""
        expires = None if token.expires_in is None else time.time() + int(token.expires_in)
        return cls(
            token.access_token,
            token.refresh_token or previous_refresh,
            token.token_type,
            token.scope,
            expires,
        )


async def discover(
    http: httpx.AsyncClient,
    name: str,
    url: str,
    *,
    transport: str = "http",
    headers: dict[str, str] | None = None,
    scopes: tuple[str, ...] = (),
) -> AuthServer:
    """Discover the authorization server of MCP server `name` at `url` (called with
    `headers` and no token). `scopes`: the configured ones; none: what its 401 or its
    resource metadata suggests."""
    challenge = await _probe(http, name, url, transport, headers or {})
    resource_metadata = None
    www_scope = None
    if challenge is not None:
        resource_metadata = extract_resource_metadata_from_www_auth(challenge)
        www_scope = extract_scope_from_www_auth(challenge)
    prm: ProtectedResourceMetadata | None = None
    for candidate in build_protected_resource_metadata_discovery_urls(resource_metadata, url):
        response = await _get(http, name, candidate, "its protected resource metadata")
        prm = await handle_protected_resource_response(response)
        if prm is not None:
            break
    resource = resource_url_from_server_url(url)
    if prm is not None:
        advertised = str(prm.resource)
        if not check_resource_allowed(requested_resource=resource, configured_resource=advertised):
            raise ConnectionFailed(
                f'MCP server "{name}" ({url}): its protected resource metadata names resource '
                f"{advertised}, which is not this server — check its url in mcp.json"
            )
        resource = advertised
        issuer_url: str | None = str(prm.authorization_servers[0])
    else:
        issuer_url = None  # 2025-03-26 servers: the authorization server is at the origin
    issuer, metadata = await _server_metadata(http, name, url, issuer_url)
    if "S256" not in (metadata.code_challenge_methods_supported or []):
        raise ConnectionFailed(
            f'MCP server "{name}": its authorization server {metadata.issuer} does not say it '
            "supports PKCE with S256 (code_challenge_methods_supported), which the MCP "
            "authorization spec requires — connections to it are refused"
        )
    chosen = " ".join(scopes) if scopes else get_client_metadata_scopes(www_scope, prm, metadata)
    return AuthServer(_bare(issuer), metadata, resource, chosen)


async def _probe(
    http: httpx.AsyncClient, name: str, url: str, transport: str, headers: dict[str, str]
) -> httpx.Response | None:
    """The MCP server's answer to a request without a token: its 401, or None."""
    sent = {"MCP-Protocol-Version": LATEST_PROTOCOL_VERSION, **headers}
    try:
        if transport == "sse":
            request = http.build_request(
                "GET", url, headers={**sent, "Accept": "text/event-stream"}
            )
        else:
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": LATEST_PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "agentctl", "version": "1"},
                },
            }
            request = http.build_request(
                "POST",
                url,
                json=body,
                headers={**sent, "Accept": "application/json, text/event-stream"},
            )
        response = await http.send(request, stream=True)
        await response.aclose()
    except httpx.HTTPError as exc:
        raise _unreachable(name, url, "the server itself", exc) from None
    return response if response.status_code in (401, 403) else None


async def _server_metadata(
    http: httpx.AsyncClient, name: str, url: str, issuer_url: str | None
) -> tuple[str, OAuthMetadata]:
    """The issuer (as the resource metadata names it) and its metadata."""
    urls = build_oauth_authorization_server_metadata_discovery_urls(issuer_url, url)
    for candidate in urls:
        response = await _get(http, name, candidate, "its authorization server's metadata")
        go_on, metadata = await handle_auth_metadata_response(response)
        if metadata is not None:
            expected = issuer_url or f"{urlparse(url).scheme}://{urlparse(url).netloc}"
            try:
                validate_metadata_issuer(metadata, expected)
            except OAuthFlowError as exc:
                raise ConnectionFailed(f'MCP server "{name}": {exc}') from None
            return expected, metadata
        if not go_on:
            raise ConnectionFailed(
                f'MCP server "{name}": its authorization server failed to give its metadata '
                f"at {candidate} (HTTP {response.status_code}) — try again later"
            )
    raise ConnectionFailed(
        f'MCP server "{name}": no authorization server metadata found (tried '
        f"{', '.join(urls)}) — is it an OAuth-protected MCP server? Without `oauth` in "
        "mcp.json, its headers are used instead"
    )


def _bare(issuer: str) -> str:
    """A root issuer without the "/" pydantic's URLs add (`https://as.example.com`)."""
    return issuer[:-1] if urlparse(issuer).path == "/" else issuer


async def _get(http: httpx.AsyncClient, name: str, url: str, what: str) -> httpx.Response:
    try:
        return await http.send(create_oauth_metadata_request(url))
    except httpx.HTTPError as exc:
        raise _unreachable(name, url, what, exc) from None


def client_info(
    client_id: str, client_secret: str | None, redirect_uri: str, server: AuthServer
) -> OAuthClientInformationFull:
    """A configured client (mcp.json's `oauth.client_id`/`client_secret`, expanded)."""
    method = _auth_method(server.metadata) if client_secret else "none"
    return OAuthClientInformationFull(
        client_id=client_id,
        client_secret=client_secret,
        token_endpoint_auth_method=cast(Any, method),
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=GRANTS,
    )


async def register(
    http: httpx.AsyncClient, name: str, server: AuthServer, redirect_uri: str, client_name: str
) -> OAuthClientInformationFull:
    """Register a client at the authorization server (RFC 7591)."""
    if server.metadata.registration_endpoint is None:
        raise ConnectionFailed(
            f'MCP server "{name}": its authorization server {server.issuer} offers no dynamic '
            'client registration — register a client there and set "client_id" (and '
            '"client_secret": "${VAR}") in its "oauth" in mcp.json'
        )
    metadata = OAuthClientMetadata(
        redirect_uris=[AnyUrl(redirect_uri)],
        token_endpoint_auth_method=cast(Any, _auth_method(server.metadata)),
        grant_types=GRANTS,
        response_types=["code"],
        scope=server.scopes,
        client_name=client_name,
    )
    request = create_client_registration_request(server.metadata, metadata, server.issuer)
    try:
        response = await http.send(request)
        return await handle_registration_response(response)
    except httpx.HTTPError as exc:
        raise _unreachable(name, str(request.url), "client registration", exc) from None
    except OAuthFlowError as exc:
        raise ConnectionFailed(
            f'MCP server "{name}": its authorization server refused to register agentctl '
            f"as a client at {request.url}: {short(str(exc))}"
        ) from None


def _auth_method(metadata: OAuthMetadata) -> str:
    """How a confidential client authenticates at the token endpoint: basic if offered."""
    offered = metadata.token_endpoint_auth_methods_supported or ["client_secret_basic"]
    for method in ("client_secret_basic", "client_secret_post", "none"):
        if method in offered:
            return method
    return offered[0]


def authorization_url(
    server: AuthServer,
    client: OAuthClientInformationFull,
    redirect_uri: str,
    state: str,
    pkce: PKCEParameters,
) -> str:
    """Where the user's browser goes to consent."""
    params = {
        "response_type": "code",
        "client_id": client.client_id or "",
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": pkce.code_challenge,
        "code_challenge_method": "S256",
        "resource": server.resource,
    }
    if server.scopes:
        params["scope"] = server.scopes
    url = httpx.URL(str(server.metadata.authorization_endpoint))
    return str(url.copy_merge_params(params))


async def exchange(
    http: httpx.AsyncClient,
    name: str,
    token_endpoint: str,
    client: OAuthClientInformationFull,
    *,
    code: str,
    verifier: str,
    redirect_uri: str,
    resource: str,
) -> Tokens:
    """The tokens for an authorization code; `ConsentRefused` when the authorization
    server refuses the code itself (expired, already used: a double click)."""
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
        "resource": resource,
    }
    try:
        token = await _token_request(
            http, name, token_endpoint, client, data, "authorization code", ("invalid_grant",)
        )
    except GrantRefused:
        raise ConsentRefused(
            f"this sign-in to {name} was already used or expired (its provider refused the "
            "code) — start connecting again"
        ) from None
    return Tokens.of(token)


async def refresh(
    http: httpx.AsyncClient,
    name: str,
    token_endpoint: str,
    client: OAuthClientInformationFull,
    *,
    refresh_token: str,
    resource: str,
) -> Tokens:
    """New tokens for a refresh token; `GrantRefused` when it is refused for good."""
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "resource": resource}
    token = await _token_request(
        http, name, token_endpoint, client, data, "refresh token", REFRESH_REFUSALS
    )
    return Tokens.of(token, previous_refresh=refresh_token)


async def revoke(
    http: httpx.AsyncClient,
    endpoint: str,
    client: OAuthClientInformationFull,
    token: str,
    hint: str,
    methods: list[str] | None = None,
) -> bool:
    """Revoke `token` (RFC 7009); whether the authorization server said yes. `methods`: the
    client authentication methods its revocation endpoint takes (its metadata's), tried in
    the order basic, post (some servers, the `mcp` SDK's among them, read the form only)."""
    own = client.token_endpoint_auth_method
    tried = [own] if not methods or own in methods else []
    if client.client_secret:
        tried += [m for m in ("client_secret_basic", "client_secret_post") if m in (methods or [])]
    for method in dict.fromkeys(tried) or [own]:
        as_method = client.model_copy(update={"token_endpoint_auth_method": method})
        data, headers = _client_auth(as_method, {"token": token, "token_type_hint": hint})
        try:
            response = await http.post(endpoint, data=data, headers=headers, timeout=TIMEOUT)
        except httpx.HTTPError:
            return False
        if response.status_code == 200:
            return True
        if response.status_code not in (400, 401):
            return False
    return False


async def _token_request(
    http: httpx.AsyncClient,
    name: str,
    endpoint: str,
    client: OAuthClientInformationFull,
    data: dict[str, str],
    what: str,
    refusals: tuple[str, ...],
) -> OAuthToken:
    """The token endpoint's answer to `data`; `GrantRefused` for an error of `refusals`."""
    data, headers = _client_auth(client, data)
    try:
        response = await http.post(endpoint, data=data, headers=headers, timeout=TIMEOUT)
    except httpx.HTTPError as exc:
        raise _unreachable(name, endpoint, f"the exchange of its {what}", exc) from None
    if response.status_code == 200:
        try:
            return OAuthToken.model_validate_json(response.content)
        except ValidationError:
            raise ConnectionFailed(
                f'MCP server "{name}": its token endpoint {endpoint} answered the {what} with '
                "something that is not an OAuth token response"
            ) from None
    error, description = _oauth_error(response)
    for secret in (data.get(k) for k in ("code", "code_verifier", "refresh_token")):
        if secret:  # an authorization server echoing what it refused shows it nowhere
            error, description = error.replace(secret, "***"), description.replace(secret, "***")
    if client.client_secret:
        description = description.replace(client.client_secret, "***")
    if error in refusals:
        raise GrantRefused(error)
    raise ConnectionFailed(
        f'MCP server "{name}": its token endpoint {endpoint} refused the {what} '
        f"(HTTP {response.status_code}: {error}{': ' + description if description else ''})"
    )


def _client_auth(
    client: OAuthClientInformationFull, data: dict[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """`data` and headers with the client's authentication, as the SDK's client sends it."""
    context = OAuthContext(
        server_url="",
        client_metadata=client,
        storage=cast(Any, None),
        redirect_handler=None,
        callback_handler=None,
        client_info=client,
    )
    data = {**data, "client_id": client.client_id or ""}
    return context.prepare_token_auth(data, {"Accept": "application/json"})


def _oauth_error(response: httpx.Response) -> tuple[str, str]:
    """An OAuth error response's `error` and `error_description` (RFC 6749 §5.2)."""
    try:
        body = response.json()
    except ValueError:
        return "no OAuth error", ""
    if not isinstance(body, dict):
        return "no OAuth error", ""
    return short(str(body.get("error", "no OAuth error"))), short(
        str(body.get("error_description") or "")
    )


def short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _unreachable(name: str, url: str, what: str, exc: httpx.HTTPError) -> ConnectionFailed:
    reason = type(exc).__name__ + (f": {short(str(exc))}" if str(exc) else "")
    return ConnectionFailed(
        f'MCP server "{name}": {url} ({what}) could not be reached: {reason} — check that '
        "it is running and reachable from this server"
    )
