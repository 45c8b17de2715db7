"""The loopback OAuth provider and its notes MCP server (agentctl.testing.oauth_provider) follow
the standards: the official `mcp` client's OAuth support connects through them, and tokens are
bound to a user, a resource and a lifetime; refresh tokens rotate; revocation holds."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
from collections.abc import AsyncIterator, Generator, Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.types import CallToolResult, TextContent
from pydantic import AnyUrl

from agentctl.testing.oauth_provider import (
    OAuthProvider,
    SignInError,
    main,
    running_oauth_provider,
)

CALLBACK = "http://127.0.0.1:9/connections/callback"  # never opened: sign_in stops at it
JSON_RPC = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "tests", "version": "1"},
    },
}


@pytest.fixture(scope="module")
def provider() -> Iterator[OAuthProvider]:
    with OAuthProvider(clients={"agentctl": "agentctl-secret"}) as served:
        yield served


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def sdk_auth(provider: OAuthProvider, user: str, storage: MemoryStorage) -> OAuthClientProvider:
    """The official client's OAuth, signing `user` in through the provider's page."""
    landed: list[str] = []

    async def redirect_handler(authorization_url: str) -> None:
        async with httpx.AsyncClient(timeout=10) as browser:
            landed.append(await provider.sign_in(browser, authorization_url, user))

    async def callback_handler() -> tuple[str, str | None]:
        query = parse_qs(urlsplit(landed[-1]).query)
        return query["code"][0], query.get("state", [None])[0]

    metadata = OAuthClientMetadata(redirect_uris=[AnyUrl(CALLBACK)], client_name="sdk tests")
    return OAuthClientProvider(
        provider.mcp_url, metadata, storage, redirect_handler, callback_handler
    )


async def call_tools(
    provider: OAuthProvider, auth: httpx.Auth, *calls: tuple[str, dict[str, Any]]
) -> list[CallToolResult]:
    async with (
        httpx.AsyncClient(auth=auth, timeout=10) as client,
        streamable_http_client(provider.mcp_url, http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return [await session.call_tool(name, arguments) for name, arguments in calls]


def texts(result: CallToolResult) -> list[str]:
    assert not result.isError, result
    return [block.text for block in result.content if isinstance(block, TextContent)]


class Bearer(httpx.Auth):
    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


async def register(http: httpx.AsyncClient, provider: OAuthProvider) -> dict[str, Any]:
    body = {"redirect_uris": [CALLBACK], "client_name": "tests"}
    response = await http.post(f"{provider.issuer}/register", json=body)
    assert response.status_code == 201, response.text
    client: dict[str, Any] = response.json()
    return client


async def authorize(
    http: httpx.AsyncClient,
    provider: OAuthProvider,
    client_id: str,
    user: str,
    *,
    resource: str | None = None,
    redirect_uri: str = CALLBACK,
    scope: str = "notes.read",
) -> tuple[str, str]:
    """Sign `user` in for `client_id`; the code and PKCE verifier."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": challenge.decode().rstrip("="),
        "code_challenge_method": "S256",
        "state": "state-1",
        "scope": scope,
        "resource": resource or provider.mcp_url,
    }
    landed = await provider.sign_in(http, f"{provider.issuer}/authorize?{urlencode(query)}", user)
    assert landed.startswith(redirect_uri + "?")
    back = parse_qs(urlsplit(landed).query)
    assert back["state"] == ["state-1"]
    return back["code"][0], verifier


async def tokens_of(
    http: httpx.AsyncClient, provider: OAuthProvider, user: str, *, resource: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A registered client and the tokens `user` granted it."""
    client = await register(http, provider)
    code, verifier = await authorize(http, provider, client["client_id"], user, resource=resource)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": CALLBACK,
        "client_id": client["client_id"],
        "client_secret": client["client_secret"],
        "code_verifier": verifier,
    }
    response = await http.post(f"{provider.issuer}/token", data=form)
    assert response.status_code == 200, response.text
    tokens: dict[str, Any] = response.json()
    return client, tokens


async def refresh(
    http: httpx.AsyncClient, provider: OAuthProvider, client: dict[str, Any], token: str
) -> httpx.Response:
    form = {
        "grant_type": "refresh_token",
        "refresh_token": token,
        "client_id": client["client_id"],
        "client_secret": client["client_secret"],
    }
    return await http.post(f"{provider.issuer}/token", data=form)


async def mcp_status(http: httpx.AsyncClient, provider: OAuthProvider, token: str) -> int:
    headers = {**JSON_RPC, "Authorization": f"Bearer {token}"}
    response = await http.post(provider.mcp_url, json=INITIALIZE, headers=headers)
    return response.status_code


async def test_the_sdk_client_connects_through_the_sign_in_page(provider: OAuthProvider) -> None:
    storage = MemoryStorage()
    before = provider.token_requests
    whoami, notes = await call_tools(
        provider, sdk_auth(provider, "alice", storage), ("whoami", {}), ("my_notes", {})
    )
    assert texts(whoami) == ["alice"]
    assert texts(notes) == provider.notes["alice"]
    assert provider.token_requests == before + 1
    assert storage.client is not None
    assert storage.client.client_id in provider.auth.clients
    assert storage.tokens is not None
    assert storage.tokens.refresh_token


async def test_each_user_sees_only_their_own_notes(provider: OAuthProvider) -> None:
    (added, bobs), (carols,) = await asyncio.gather(
        call_tools(
            provider,
            sdk_auth(provider, "bob", MemoryStorage()),
            ("add_note", {"text": "Bob's secret"}),
            ("my_notes", {}),
        ),
        call_tools(provider, sdk_auth(provider, "carol", MemoryStorage()), ("my_notes", {})),
    )
    assert texts(added) == ["added note 2"]
    assert texts(bobs) == ["Water the ficus", "Bob's secret"]
    assert texts(carols) == []  # carol has none
    assert "Bob's secret" not in provider.notes["alice"]


async def test_the_sdk_client_refreshes_an_expired_token() -> None:
    async with running_oauth_provider(access_token_seconds=1) as provider:
        storage = MemoryStorage()
        auth = sdk_auth(provider, "alice", storage)
        (first,) = await call_tools(provider, auth, ("whoami", {}))
        assert storage.tokens is not None
        old = storage.tokens.access_token
        await asyncio.sleep(1.1)
        (second,) = await call_tools(provider, auth, ("whoami", {}))
        assert texts(first) == texts(second) == ["alice"]
        assert provider.refresh_requests == 1
        assert provider.token_requests == 1
        assert storage.tokens.access_token != old


async def test_refresh_tokens_rotate(provider: OAuthProvider, http: httpx.AsyncClient) -> None:
    client, tokens = await tokens_of(http, provider, "alice")
    assert tokens["token_type"] == "Bearer"
    assert tokens["scope"] == "notes.read"
    assert tokens["expires_in"] == 3600
    first = await refresh(http, provider, client, tokens["refresh_token"])
    assert first.status_code == 200, first.text
    renewed = first.json()
    assert renewed["refresh_token"] != tokens["refresh_token"]
    assert await mcp_status(http, provider, renewed["access_token"]) == 200
    reused = await refresh(http, provider, client, tokens["refresh_token"])
    assert reused.status_code == 400
    assert reused.json()["error"] == "invalid_grant"
    assert (await refresh(http, provider, client, renewed["refresh_token"])).status_code == 200


async def test_a_grant_the_provider_revoked_cannot_be_refreshed(
    provider: OAuthProvider, http: httpx.AsyncClient
) -> None:
    client, tokens = await tokens_of(http, provider, "carol")
    assert provider.revoke_refresh_tokens("carol") >= 1
    refused = await refresh(http, provider, client, tokens["refresh_token"])
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_grant"
    assert await mcp_status(http, provider, tokens["access_token"]) == 200  # until it expires
    assert provider.revoke_access_tokens("carol") >= 1
    assert await mcp_status(http, provider, tokens["access_token"]) == 401


async def test_revocation_ends_the_whole_grant(
    provider: OAuthProvider, http: httpx.AsyncClient
) -> None:
    client, tokens = await tokens_of(http, provider, "bob")
    form = {
        "token": tokens["access_token"],
        "client_id": client["client_id"],
        "client_secret": client["client_secret"],
    }
    assert (await http.post(f"{provider.issuer}/revoke", data=form)).status_code == 200
    assert await mcp_status(http, provider, tokens["access_token"]) == 401
    assert (await refresh(http, provider, client, tokens["refresh_token"])).status_code == 400


async def test_a_token_for_another_resource_is_refused(
    provider: OAuthProvider, http: httpx.AsyncClient
) -> None:
    _, tokens = await tokens_of(http, provider, "alice", resource="https://other.example/mcp")
    introspected = provider.auth.introspect(tokens["access_token"])
    assert introspected["aud"] == "https://other.example/mcp"
    assert introspected["sub"] == "alice"
    headers = {**JSON_RPC, "Authorization": f"Bearer {tokens['access_token']}"}
    response = await http.post(provider.mcp_url, json=INITIALIZE, headers=headers)
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{provider.resource_metadata_url}"' in challenge


async def test_a_wrong_password_shows_the_page_again(
    provider: OAuthProvider, http: httpx.AsyncClient
) -> None:
    client = await register(http, provider)
    query = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": CALLBACK,
        "code_challenge": "x" * 43,
        "code_challenge_method": "S256",
    }
    url = f"{provider.issuer}/authorize?{urlencode(query)}"
    with pytest.raises(SignInError, match="Wrong user name or password") as refused:
        await provider.sign_in(http, url, "alice", "not-her-password")
    assert 'type="password"' in refused.value.page
    assert 'value="alice"' in refused.value.page
    landed = await provider.sign_in(http, url, "alice")  # a new request: the page works again
    assert "code=" in landed


async def test_metadata_and_challenges(provider: OAuthProvider, http: httpx.AsyncClient) -> None:
    metadata = (await http.get(provider.metadata_url)).json()
    assert metadata["issuer"] == provider.issuer
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["scopes_supported"] == ["notes.read", "notes.write"]
    for endpoint in ("authorization", "token", "registration", "revocation", "introspection"):
        assert metadata[f"{endpoint}_endpoint"].startswith(provider.issuer + "/")
    openid = await http.get(f"{provider.issuer}/.well-known/openid-configuration")
    assert openid.json() == metadata
    unauthenticated = await http.post(provider.mcp_url, json=INITIALIZE, headers=JSON_RPC)
    assert unauthenticated.status_code == 401
    assert provider.resource_metadata_url in unauthenticated.headers["www-authenticate"]
    resource = (await http.get(provider.resource_metadata_url)).json()
    assert resource["resource"] == provider.mcp_url
    assert resource["authorization_servers"] == [provider.issuer]
    assert resource["scopes_supported"] == ["notes.read", "notes.write"]
    # PKCE is required
    no_pkce = {"response_type": "code", "client_id": "agentctl", "redirect_uri": CALLBACK}
    response = await http.get(f"{provider.issuer}/authorize?{urlencode(no_pkce)}")
    assert response.status_code == 302
    assert "error=invalid_request" in response.headers["location"]
    # introspection needs the resource server's credentials
    assert (
        await http.post(f"{provider.issuer}/introspect", data={"token": "x"})
    ).status_code == 401


async def test_a_pre_registered_confidential_client(
    provider: OAuthProvider, http: httpx.AsyncClient
) -> None:
    code, verifier = await authorize(http, provider, "agentctl", "alice")
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": CALLBACK,
        "code_verifier": verifier,
    }
    token = f"{provider.issuer}/token"
    wrong = await http.post(token, data=form, auth=("agentctl", "wrong"))
    assert wrong.status_code == 401
    answered = await http.post(token, data=form, auth=("agentctl", "agentctl-secret"))
    assert answered.status_code == 200, answered.text
    (whoami,) = await call_tools(provider, Bearer(answered.json()["access_token"]), ("whoami", {}))
    assert texts(whoami) == ["alice"]
    again = await http.post(token, data=form, auth=("agentctl", "agentctl-secret"))
    assert again.status_code == 400  # a code is redeemed once
    with pytest.raises(SignInError):  # only loopback redirect URIs
        await authorize(http, provider, "agentctl", "alice", redirect_uri="https://evil.example/cb")


def test_the_command_refuses_malformed_users(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--users", "alice"])
    assert "write NAME:PASSWORD" in capsys.readouterr().err


async def test_a_token_request_for_another_resource_is_refused(
    provider: OAuthProvider, http: httpx.AsyncClient
) -> None:
    client = await register(http, provider)
    code, verifier = await authorize(http, provider, client["client_id"], "alice")
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": CALLBACK,
        "client_id": client["client_id"],
        "client_secret": client["client_secret"],
        "code_verifier": verifier,
        "resource": "https://other.example/mcp",
    }
    refused = await http.post(f"{provider.issuer}/token", data=form)
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_target"
    form["resource"] = provider.mcp_url
    answered = await http.post(f"{provider.issuer}/token", data=form)
    assert answered.status_code == 200, answered.text
    renewal = {
        "grant_type": "refresh_token",
        "refresh_token": answered.json()["refresh_token"],
        "client_id": client["client_id"],
        "client_secret": client["client_secret"],
        "resource": "https://other.example/mcp",
    }
    assert (await http.post(f"{provider.issuer}/token", data=renewal)).status_code == 400


async def test_scopes_are_enforced(provider: OAuthProvider, http: httpx.AsyncClient) -> None:
    client = await register(http, provider)
    code, verifier = await authorize(
        http, provider, client["client_id"], "alice", scope="notes.write"
    )
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": CALLBACK,
        "client_id": client["client_id"],
        "client_secret": client["client_secret"],
        "code_verifier": verifier,
    }
    write_only = (await http.post(f"{provider.issuer}/token", data=form)).json()["access_token"]
    response_status = await mcp_status(http, provider, write_only)
    assert response_status == 403  # the server requires notes.read
    _, read_only = await tokens_of(http, provider, "alice")
    (added,) = await call_tools(
        provider, Bearer(read_only["access_token"]), ("add_note", {"text": "x"})
    )
    assert added.isError
    assert "needs the notes.write scope" in str(added.content)


async def test_cancel_sends_the_browser_back_denied(
    provider: OAuthProvider, http: httpx.AsyncClient
) -> None:
    client = await register(http, provider)
    query = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": CALLBACK,
        "code_challenge": "x" * 43,
        "state": "s",
    }
    page = await http.get(f"{provider.issuer}/authorize?{urlencode(query)}", follow_redirects=True)
    request_id = parse_qs(urlsplit(str(page.url)).query)["request"][0]
    cancelled = await http.post(
        f"{provider.issuer}/sign-in", data={"request": request_id, "action": "cancel"}
    )
    assert cancelled.status_code == 303
    assert parse_qs(urlsplit(cancelled.headers["location"]).query) == {
        "error": ["access_denied"],
        "state": ["s"],
    }


async def test_outage_and_no_registration(provider: OAuthProvider, http: httpx.AsyncClient) -> None:
    provider.outage = True
    try:
        assert (await http.get(provider.metadata_url)).status_code == 503
    finally:
        provider.outage = False
    async with running_oauth_provider(dynamic_registration=False, clients={"c": "s"}) as fixed:
        metadata = (await http.get(fixed.metadata_url)).json()
        assert "registration_endpoint" not in metadata
        assert (await http.post(f"{fixed.issuer}/register", json={})).status_code == 404
