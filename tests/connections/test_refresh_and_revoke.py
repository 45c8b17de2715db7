"""What a connection becomes when things go wrong at the provider or between replicas: a
revocation deletes first and waits a bounded time on the provider, a refusal removes only the
connection it refused (never a reconnection written meanwhile), a refresh claimed elsewhere
is never taken over while the claim holds and always released, and a refused code is the
user's to retry, not a provider failure."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import orjson
import pytest

from agentctl.connections import TokenBox, vault
from agentctl.errors import ConnectionFailed, ConsentRefused, UserError
from agentctl.project.model import McpOAuth
from agentctl.sealing import split_keys
from agentctl.storage.base import ConnectionStore, ConsentFlow
from agentctl.testing.oauth_provider import OAuthProvider
from tests.conftest import eventually
from tests.connections.test_connections import KEY, connect, connections, signed_in, tokens_of

CONFIGURED = McpOAuth(client_id="${NOTES_ID}", client_secret="${NOTES_SECRET}")
GOOD_ENV = {"NOTES_ID": "agentctl", "NOTES_SECRET": "agentctl-secret"}


class HeldEndpoint:
    """A real HTTP endpoint on a free port that answers each request only once released
    (never, unless `release` is set): a provider that is slow, or hangs."""

    def __init__(self, status: int = 400, body: dict[str, Any] | None = None) -> None:
        self.status = status
        self.body = orjson.dumps(body or {"error": "invalid_grant"})
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()
        self.url = ""
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> HeldEndpoint:
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/token"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release.set()
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "content-length":
                length = int(value)
        await reader.readexactly(length)
        self.arrived.set()
        await self.release.wait()
        writer.write(
            f"HTTP/1.1 {self.status} X\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(self.body)}\r\nConnection: close\r\n\r\n".encode()
            + self.body
        )
        await writer.drain()
        writer.close()


async def rewrite(store: ConnectionStore, user: str, **changes: Any) -> dict[str, Any]:
    """Change fields of `user`'s stored token set (as a provider's answers would have)."""
    stored = await store.get(user, "notes")
    assert stored is not None
    tokens = {**tokens_of(stored.sealed), **changes}
    sealed = TokenBox(split_keys(KEY)).seal(tokens)
    assert await store.put(replace(stored, sealed=sealed), expected_version=stored.version)
    return tokens


async def stored_tokens(store: ConnectionStore, user: str) -> dict[str, Any] | None:
    stored = await store.get(user, "notes")
    return None if stored is None else dict(tokens_of(stored.sealed))


# -- revoking -----------------------------------------------------------------------------


async def test_a_revocation_deletes_before_it_asks_the_provider(
    provider: OAuthProvider, store: ConnectionStore, browser: httpx.AsyncClient
) -> None:
    """A provider that hangs: the connection is already gone, and stays gone when the
    revocation is cancelled (a client that disconnected)."""
    vault_ = connections(store, provider)
    await connect(vault_, provider, browser, "alice")
    async with HeldEndpoint(200, {}) as hanging:
        await rewrite(store, "alice", revocation_endpoint=hanging.url)
        revoking = asyncio.create_task(vault_.revoke("alice", "notes"))
        await asyncio.wait_for(hanging.arrived.wait(), 5)
        assert await store.get("alice", "notes") is None
        revoking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await revoking
    assert await store.get("alice", "notes") is None


async def test_a_revocation_waits_on_the_provider_a_bounded_time(
    provider: OAuthProvider,
    store: ConnectionStore,
    browser: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vault, "REVOKE_SECONDS", 0.5)
    caplog.set_level(logging.DEBUG)
    vault_ = connections(store, provider)
    await connect(vault_, provider, browser, "alice")
    async with HeldEndpoint(200, {}) as hanging:
        tokens = await rewrite(store, "alice", revocation_endpoint=hanging.url)
        async with asyncio.timeout(5):
            assert await vault_.revoke("alice") == 1
    assert await store.get("alice", "notes") is None
    assert "revoking" in caplog.text
    assert tokens["access_token"] not in caplog.text
    assert tokens["refresh_token"] not in caplog.text


async def test_a_revocation_ends_the_users_flows_and_purges_expired_ones(
    provider: OAuthProvider, store: ConnectionStore, browser: httpx.AsyncClient
) -> None:
    vault_ = connections(store, provider)
    await connect(vault_, provider, browser, "alice")
    asked = await vault_.begin("alice", "notes")
    bobs = await vault_.begin("bob", "notes")
    old = datetime.now(UTC) - timedelta(hours=2)
    expired = ConsentFlow("x" * 43, "carol", "notes", None, None, "pending", old, old)
    await store.add_flow(expired)
    assert await vault_.revoke("alice", "notes") == 1
    assert await store.get_flow(asked.flow_id) is None
    assert await store.get_flow(expired.flow_id) is None
    assert await store.get_flow(bobs.flow_id) is not None
    # Nothing connected: the flows end all the same.
    asked = await vault_.begin("alice", "notes")
    assert await vault_.revoke("alice") == 0
    assert await store.get_flow(asked.flow_id) is None


async def test_a_connection_to_a_server_no_longer_configured_can_be_revoked(
    provider: OAuthProvider, store: ConnectionStore, browser: httpx.AsyncClient
) -> None:
    await connect(connections(store, provider), provider, browser, "alice")
    stored = await store.get("alice", "notes")
    assert stored is not None
    await store.put(replace(stored, server="calendar"), expected_version=None)
    assert await connections(store, provider).revoke("alice", "calendar") == 1
    assert await store.get("alice", "calendar") is None
    assert await store.get("alice", "notes") is not None


# -- refusals -----------------------------------------------------------------------------


async def test_a_refused_refresh_removes_only_the_connection_it_refused(
    provider: OAuthProvider, store: ConnectionStore, browser: httpx.AsyncClient
) -> None:
    """The user reconnects (on another replica) while a refresh of their old grant is on its
    way; the refusal then removes nothing, and the new connection is used."""
    one, two = connections(store, provider), connections(store, provider)
    await connect(one, provider, browser, "alice")
    async with HeldEndpoint() as refusing:  # answers invalid_grant when released
        await rewrite(store, "alice", token_endpoint=refusing.url, expires_at=0, issued_at=0)
        refreshing = asyncio.create_task(one.access_token("alice", "notes"))
        await asyncio.wait_for(refusing.arrived.wait(), 5)
        await connect(two, provider, browser, "alice")
        reconnected = await stored_tokens(store, "alice")
        assert reconnected is not None
        refusing.release.set()
        assert await refreshing == reconnected["access_token"]
    assert await stored_tokens(store, "alice") == reconnected


async def test_a_client_refused_at_refresh_asks_for_consent_again(
    provider: OAuthProvider, store: ConnectionStore, browser: httpx.AsyncClient
) -> None:
    """The client's secret was rotated at the provider (`unauthorized_client`,
    `invalid_client`): consent again, not an error at every call."""
    vault_ = connections(store, provider, oauth=CONFIGURED, env=GOOD_ENV)
    await connect(vault_, provider, browser, "alice")
    token = await vault_.access_token("alice", "notes")
    assert token is not None
    await vault_.invalidate("alice", "notes", token)
    stale = connections(store, provider, oauth=CONFIGURED, env={**GOOD_ENV, "NOTES_SECRET": "x"})
    assert await stale.access_token("alice", "notes") is None
    assert await store.get("alice", "notes") is None


async def test_a_code_refused_by_the_provider_is_a_consent_to_ask_again(
    provider: OAuthProvider, store: ConnectionStore, browser: httpx.AsyncClient
) -> None:
    """An expired code, or one spent by a double click: a 400 saying to start again."""
    vault_ = connections(store, provider)
    request = await vault_.begin("alice", "notes")
    url, binding = await vault_.redirect(request.flow_id)
    state, _ = await signed_in(provider, browser, url, "alice")
    with pytest.raises(ConsentRefused, match="already used or expired") as refused:
        await vault_.complete(state, "a-spent-code", binding)
    assert refused.value.status == 400
    assert "start connecting again" in str(refused.value)
    assert await store.get("alice", "notes") is None
    flow = await store.get_flow(request.flow_id)
    assert flow is not None
    assert flow.status == "failed"


# -- claims -------------------------------------------------------------------------------


async def test_a_live_claim_is_never_taken_over(
    provider: OAuthProvider,
    store: ConnectionStore,
    browser: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another replica holds the refresh: the waiter waits a bounded time, then uses the
    access token while it is valid, or fails; it never spends the refresh token itself."""
    monkeypatch.setattr(vault, "CLAIM_SECONDS", 0.5)
    vault_ = connections(store, provider)
    await connect(vault_, provider, browser, "alice")
    refreshes = provider.refresh_requests
    claim = time.time() + 3600
    tokens = await rewrite(store, "alice", expires_at=time.time() + 30, claim=claim)
    assert await vault_.access_token("alice", "notes") == tokens["access_token"]
    await rewrite(store, "alice", expires_at=0, issued_at=0)
    with pytest.raises(ConnectionFailed, match="being refreshed"):
        await vault_.access_token("alice", "notes")
    assert provider.refresh_requests == refreshes
    # The claim expires (its holder died): taken over.
    await rewrite(store, "alice", claim=time.time() - 1)
    fresh = await vault_.access_token("alice", "notes")
    assert fresh is not None
    assert fresh != tokens["access_token"]
    assert provider.refresh_requests == refreshes + 1


async def test_a_claim_is_released_whatever_fails(
    provider: OAuthProvider, store: ConnectionStore, browser: httpx.AsyncClient
) -> None:
    vault_ = connections(store, provider, oauth=CONFIGURED, env=GOOD_ENV)
    await connect(vault_, provider, browser, "alice")
    await rewrite(store, "alice", expires_at=0, issued_at=0)
    # The client cannot be made (a variable gone from the environment).
    broken = connections(store, provider, oauth=CONFIGURED, env={"NOTES_ID": "agentctl"})
    with pytest.raises(UserError, match="NOTES_SECRET"):
        await broken.access_token("alice", "notes")
    released = await stored_tokens(store, "alice")
    assert released is not None
    assert "claim" not in released
    # The refresh cancelled while the provider is slow.
    async with HeldEndpoint() as slow:
        await rewrite(store, "alice", token_endpoint=slow.url)
        refreshing = asyncio.create_task(vault_.access_token("alice", "notes"))
        await asyncio.wait_for(slow.arrived.wait(), 5)
        refreshing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await refreshing

    async def unclaimed() -> bool:
        tokens = await stored_tokens(store, "alice")
        return tokens is not None and "claim" not in tokens

    await eventually(unclaimed, 5, "the claim released")
