"""Users' connections to a user-owned MCP server, against the loopback OAuth provider and its
notes MCP server (agentctl.testing.oauth_provider) and the real SQLite store: the consent flow
through the provider's sign-in page, tokens sealed, refreshed (once, however many ask), revoked;
every forged, replayed, expired or misdirected step refused; no token in a log or an error."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from agentctl.connections import CompletedFlow, Connections, TokenBox, consent_value
from agentctl.connections.mcp_client import Unauthorized, call_tool
from agentctl.errors import ConsentRefused, NotFound
from agentctl.project.model import McpOAuth, McpServer
from agentctl.sealing import split_keys
from agentctl.storage.base import ConnectionStore
from agentctl.testing.oauth_provider import OAuthProvider
from tests.connections.conftest import OPEN
from tests.storage.conftest import postgres_opener

CALLBACK = "http://127.0.0.1:9/connections/callback"  # never opened: sign_in stops at it
BASE = "http://127.0.0.1:9"
KEY = "connections-test-key"


def notes(provider: OAuthProvider, oauth: McpOAuth | None = None) -> dict[str, McpServer]:
    server = McpServer(
        name="notes",
        transport="http",
        url=provider.mcp_url,
        description="Your notes in Loopback notes",
        oauth=oauth or McpOAuth(scopes=("notes.read",)),
    )
    return {"notes": server}


def connections(
    store: ConnectionStore,
    provider: OAuthProvider,
    *,
    key: str = KEY,
    oauth: McpOAuth | None = None,
    env: dict[str, str] | None = None,
) -> Connections:
    vault = Connections(
        store,
        TokenBox(split_keys(key)),
        notes(provider, oauth),
        env or {},
        callback_url=CALLBACK,
        base_url=BASE,
    )
    OPEN.append(vault)
    return vault


async def connect(
    vault: Connections, provider: OAuthProvider, browser: httpx.AsyncClient, user: str
) -> CompletedFlow:
    """Consent as `user`: begin, redirect, sign in at the provider's page, callback."""
    request = await vault.begin(user, "notes", thread_id="thread-1", assistant_id="agent")
    url, binding = await vault.redirect(request.flow_id, user_id=user)
    state, code = await signed_in(provider, browser, url, user)
    return await vault.complete(state, code, binding)


async def signed_in(
    provider: OAuthProvider, browser: httpx.AsyncClient, url: str, user: str
) -> tuple[str, str]:
    back = parse_qs(urlsplit(await provider.sign_in(browser, url, user)).query)
    return back["state"][0], back["code"][0]


def text(result: dict[str, object] | None) -> str:
    assert result is not None
    content = result["content"]
    assert isinstance(content, list)
    return " ".join(str(part["text"]) for part in content)


def tokens_of(sealed: bytes, key: str = KEY) -> dict[str, object]:
    value, _ = TokenBox(split_keys(key)).open(sealed)
    return value


async def test_a_user_connects_and_the_server_acts_as_them(
    provider: OAuthProvider,
    store: ConnectionStore,
    browser: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    vault = connections(store, provider)
    assert await vault.access_token("alice", "notes") is None
    request = await vault.begin("alice", "notes", thread_id="thread-1", assistant_id="agent")
    assert request.authorization_url == f"{BASE}/ui/#/connect/{request.flow_id}"
    value = consent_value(request, "Your notes in Loopback notes")
    assert value["type"] == "connection_required"
    assert value["authorization_url"] == request.authorization_url
    assert request.authorization_url in value["message"]

    url, binding = await vault.redirect(request.flow_id, user_id="alice")
    query = parse_qs(urlsplit(url).query)
    assert query["code_challenge_method"] == ["S256"]
    assert query["resource"] == [provider.mcp_url]
    assert query["scope"] == ["notes.read"]
    assert query["redirect_uri"] == [CALLBACK]
    state, code = await signed_in(provider, browser, url, "alice")
    done = await vault.complete(state, code, binding)
    assert (done.user_id, done.server, done.thread_id) == ("alice", "notes", "thread-1")

    token = await vault.access_token("alice", "notes")
    assert token
    tools = await vault.list_tools("alice", "notes")
    assert tools is not None
    assert {"whoami", "my_notes", "add_note"} <= {tool["name"] for tool in tools}
    assert await store.get_catalog("notes") == tools
    assert text(await vault.call_tool("alice", "notes", "whoami", {})) == "alice"

    await connect(vault, provider, browser, "bob")
    assert "Water the ficus" in text(await vault.call_tool("bob", "notes", "my_notes", {}))
    assert "oat milk" not in text(await vault.call_tool("bob", "notes", "my_notes", {}))
    assert await vault.call_tool("carol", "notes", "whoami", {}) is None  # consent needed
    assert await store.counts() == {"notes": 2}
    [status] = await vault.list("alice")
    assert status.connected
    assert status.scopes == ("notes.read",)
    assert [s.connected for s in await vault.list("carol")] == [False]

    # The registered client is kept sealed, and used again by the next flow.
    assert await store.get_client("notes", provider.issuer) is not None
    stored = await store.get("alice", "notes")
    assert stored is not None
    secrets = tokens_of(stored.sealed)
    for secret in (secrets["access_token"], secrets["refresh_token"]):
        assert isinstance(secret, str)
        assert secret.encode() not in stored.sealed
        assert secret not in caplog.text  # httpx and httpcore at DEBUG included
    assert code.encode() not in stored.sealed


async def test_a_configured_client_is_used_without_registering(
    provider: OAuthProvider, store: ConnectionStore, browser: httpx.AsyncClient
) -> None:
    oauth = McpOAuth(client_id="${NOTES_ID}", client_secret="${NOTES_SECRET}")
    env = {"NOTES_ID": "agentctl", "NOTES_SECRET": "agentctl-secret"}
    vault = connections(store, provider, oauth=oauth, env=env)
    request = await vault.begin("alice", "notes")
    url, binding = await vault.redirect(request.flow_id)
    assert parse_qs(urlsplit(url).query)["client_id"] == ["agentctl"]
    state, code = await signed_in(provider, browser, url, "alice")
    await vault.complete(state, code, binding)
    assert text(await vault.call_tool("alice", "notes", "whoami", {})) == "alice"
    assert await store.get_client("notes", provider.issuer) is None


async def test_every_misdirected_step_is_refused(
    provider: OAuthProvider, store: ConnectionStore, browser: httpx.AsyncClient
) -> None:
    vault = connections(store, provider)
    with pytest.raises(NotFound, match="no user-owned MCP server"):
        await vault.begin("alice", "calendar")
    request = await vault.begin("alice", "notes")
    with pytest.raises(NotFound):  # the console path: only the flow's own user
        await vault.redirect(request.flow_id, user_id="bob")
    url, binding = await vault.redirect(request.flow_id, user_id="alice")
    with pytest.raises(ConsentRefused, match="already used"):
        await vault.redirect(request.flow_id)
    state, code = await signed_in(provider, browser, url, "alice")
    with pytest.raises(ConsentRefused, match="unknown or forged"):
        await vault.complete("forged-state", code, binding)
    with pytest.raises(ConsentRefused, match="no state"):
        await vault.complete(None, code, binding)
    with pytest.raises(ConsentRefused, match="did not come back to the browser"):
        await vault.complete(state, code, "another-browser")
    with pytest.raises(ConsentRefused, match="already used"):  # the state was spent
        await vault.complete(state, code, binding)
    assert await store.get("alice", "notes") is None

    # A binding cookie missing; the provider's refusal.
    for cookie, error, expected in (
        (None, None, "cookie is missing or wrong"),
        ("binding", "access_denied", "refused the connection \\(access_denied: no\\)"),
    ):
        request = await vault.begin("alice", "notes")
        url, binding = await vault.redirect(request.flow_id)
        state, code = await signed_in(provider, browser, url, "alice")
        with pytest.raises(ConsentRefused, match=expected):
            await vault.complete(
                state, code, binding if cookie else None, error=error, error_description="no"
            )

    # A replayed callback, after a successful one.
    request = await vault.begin("alice", "notes")
    url, binding = await vault.redirect(request.flow_id)
    state, code = await signed_in(provider, browser, url, "alice")
    await vault.complete(state, code, binding)
    with pytest.raises(ConsentRefused, match="already used"):
        await vault.complete(state, code, binding)

    # Two callbacks at once with one state: one connects, the other is refused.
    request = await vault.begin("alice", "notes")
    url, binding = await vault.redirect(request.flow_id)
    state, code = await signed_in(provider, browser, url, "alice")
    results = await asyncio.gather(
        *(vault.complete(state, code, binding) for _ in range(2)), return_exceptions=True
    )
    assert sorted(type(result).__name__ for result in results) == [
        "CompletedFlow",
        "ConsentRefused",
    ]

    # Expired flows: neither redirected nor completed.
    past = datetime.now(UTC) - timedelta(seconds=1)
    request = await vault.begin("alice", "notes")
    url, binding = await vault.redirect(request.flow_id)
    state, code = await signed_in(provider, browser, url, "alice")
    flow = await store.get_flow(request.flow_id)
    assert flow is not None
    assert flow.state_hash
    assert state not in flow.state_hash
    assert await store.advance_flow(replace(flow, expires_at=past), from_status="redirected")
    with pytest.raises(ConsentRefused, match="expired"):
        await vault.complete(state, code, binding)
    request = await vault.begin("alice", "notes")
    flow = await store.get_flow(request.flow_id)
    assert flow is not None
    assert await store.advance_flow(replace(flow, expires_at=past), from_status="pending")
    with pytest.raises(ConsentRefused, match="expired"):
        await vault.redirect(request.flow_id)


async def test_revoking_removes_the_connection_and_the_tokens_at_the_provider(
    provider: OAuthProvider, store: ConnectionStore, browser: httpx.AsyncClient
) -> None:
    vault = connections(store, provider)
    await connect(vault, provider, browser, "alice")
    token = await vault.access_token("alice", "notes")
    assert token is not None
    assert await vault.revoke("alice", "notes") == 1
    assert await vault.access_token("alice", "notes") is None
    headers = {"Authorization": f"Bearer {token}"}
    with pytest.raises(Unauthorized):
        await call_tool(provider.mcp_url, "http", headers, "whoami", {})


async def test_an_access_token_refused_by_the_server_is_refreshed_once(
    provider: OAuthProvider, store: ConnectionStore, browser: httpx.AsyncClient
) -> None:
    vault = connections(store, provider)
    await connect(vault, provider, browser, "bob")
    before = await vault.access_token("bob", "notes")
    provider.revoke_access_tokens("bob")
    assert text(await vault.call_tool("bob", "notes", "whoami", {})) == "bob"
    assert await vault.access_token("bob", "notes") != before


@pytest.fixture(scope="module")
def brief() -> Iterator[OAuthProvider]:
    """A provider whose access tokens live 5 seconds."""
    with OAuthProvider(access_token_seconds=5) as served:
        yield served


async def test_short_lived_tokens_are_refreshed_once_however_many_ask(
    brief: OAuthProvider, store: ConnectionStore, browser: httpx.AsyncClient
) -> None:
    replicas = [connections(store, brief), connections(store, brief)]
    await connect(replicas[0], brief, browser, "alice")
    first = await replicas[0].access_token("alice", "notes")
    stored = await store.get("alice", "notes")
    assert stored is not None
    assert stored.expires_at is not None
    await asyncio.sleep(3)  # past half its life: the next use refreshes it
    refreshes = brief.refresh_requests
    tokens = await asyncio.gather(
        *(replica.access_token("alice", "notes") for replica in replicas for _ in range(4))
    )
    assert brief.refresh_requests == refreshes + 1
    assert len(set(tokens)) == 1
    assert tokens[0] != first
    assert text(await replicas[1].call_tool("alice", "notes", "whoami", {})) == "alice"

    # The provider ends the grant: the next refresh is refused, the connection is gone.
    brief.revoke_refresh_tokens("alice")
    token = tokens[0]
    assert token is not None
    await replicas[1].invalidate("alice", "notes", token)
    assert await replicas[0].access_token("alice", "notes") is None
    assert await store.get("alice", "notes") is None


async def test_rotated_keys_open_old_tokens_and_seal_them_again(
    provider: OAuthProvider,
    store: ConnectionStore,
    browser: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    old = connections(store, provider, key="old-key")
    await connect(old, provider, browser, "alice")
    token = await old.access_token("alice", "notes")

    rotated = connections(store, provider, key="new-key, old-key")
    assert await rotated.access_token("alice", "notes") == token
    stored = await store.get("alice", "notes")
    assert stored is not None
    assert tokens_of(stored.sealed, "new-key")["access_token"] == token  # sealed again
    await rotated.redirect((await rotated.begin("carol", "notes")).flow_id)
    registered = await store.get_client("notes", provider.issuer)
    assert registered is not None
    assert tokens_of(registered, "new-key")["client_id"]  # the registration too

    # The old key removed before a connection was sealed again: not connected, said once.
    await connect(old, provider, browser, "bob")
    caplog.set_level(logging.WARNING, "agentctl.connections")
    new_only = connections(store, provider, key="new-key")
    assert await new_only.access_token("bob", "notes") is None
    assert await new_only.access_token("bob", "notes") is None
    assert [s.connected for s in await new_only.list("bob")] == [False]
    assert caplog.text.count("cannot be opened with the configured keys") == 1
    assert await new_only.access_token("alice", "notes") == token


@pytest.mark.postgres
@pytest.mark.redis
async def test_replicas_on_postgresql_refresh_a_connection_once(
    brief: OAuthProvider,
    browser: httpx.AsyncClient,
    database_url: str,
    request: pytest.FixtureRequest,
) -> None:
    async with postgres_opener(request) as open_replica:
        stores = [(await open_replica(database_url)).connections for _ in range(2)]
        replicas = [connections(store, brief) for store in stores]
        await connect(replicas[0], brief, browser, "bob")  # begun and ended on replica 1...
        request_ = await replicas[0].begin("bob", "notes")
        url, binding = await replicas[0].redirect(request_.flow_id)
        state, code = await signed_in(brief, browser, url, "bob")
        await replicas[1].complete(state, code, binding)  # ...or begun on 1, ended on 2
        first = await replicas[1].access_token("bob", "notes")
        await asyncio.sleep(3)
        refreshes = brief.refresh_requests
        tokens = await asyncio.gather(
            *(replica.access_token("bob", "notes") for replica in replicas for _ in range(3))
        )
        assert brief.refresh_requests == refreshes + 1
        assert len(set(tokens)) == 1
        assert tokens[0] != first
