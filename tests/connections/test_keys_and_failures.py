"""The key material sealing values at rest (several keys rotate it; `agentctl dev` makes its
own), and the failures of a provider: each a clear error naming the server, never a token."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from agentctl.connections import Connections, TokenBox
from agentctl.errors import ConnectionFailed, SecretsUnreadable, UserError
from agentctl.platform.secrets import SecretBox
from agentctl.project.model import McpOAuth, McpServer
from agentctl.sealing import KEY_FILE, InvalidToken, SealedJson, key_material
from agentctl.storage.base import ConnectionStore
from agentctl.testing.oauth_provider import OAuthProvider
from tests.connections.test_connections import CALLBACK, connect, notes

BASE = "http://127.0.0.1:9"


def test_the_key_material_is_the_setting_else_the_api_key_else_one_made_for_dev(
    tmp_path: Path,
) -> None:
    assert key_material("new, old", api_key="api") == ("new", "old", "new, old")
    assert key_material("only", api_key="api") == ("only",)
    assert key_material(None, api_key="a,b", data_dir=tmp_path) == ("a,b",)
    made = key_material(None, data_dir=tmp_path / "data")
    path = tmp_path / "data" / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    [key] = made
    assert len(key) >= 40
    assert key_material("", data_dir=tmp_path / "data") == made  # kept across restarts
    assert [p.name for p in path.parent.iterdir()] == [KEY_FILE]
    with pytest.raises(UserError, match="AGENTCTL_SECRETS_KEY"):
        key_material(None)
    with pytest.raises(UserError, match="empty key"):
        key_material("new,,old")


def test_deployed_secrets_rotate_the_same_way_with_their_own_keys() -> None:
    sealed = SecretBox(["old"]).seal({"OPENAI_API_KEY": "sk-1"})
    assert SecretBox(["new", "old"]).open(sealed) == {"OPENAI_API_KEY": "sk-1"}
    resealed = SecretBox(["new", "old"]).seal({"OPENAI_API_KEY": "sk-1"})
    assert SecretBox(["new"]).open(resealed) == {"OPENAI_API_KEY": "sk-1"}
    with pytest.raises(SecretsUnreadable, match="comma-separated"):
        SecretBox(["new"]).open(sealed)
    # A sealed token never opens as a deployed secret, nor the other way round.
    with pytest.raises(SecretsUnreadable):
        SecretBox(["old"]).open(TokenBox(["old"]).seal({"OPENAI_API_KEY": "sk-1"}))


def test_values_are_sealed_as_json_per_context_and_opened_with_any_key() -> None:
    value = {"b": ["tökens", 1], "a": None}
    old = SealedJson(["old"], b"one context").seal(value)
    rotated = SealedJson(["new", "old"], b"one context")
    assert rotated.open(old) == (value, False)  # opened, to be sealed again
    assert rotated.open(rotated.seal(value)) == (value, True)
    for other in (SealedJson(["old"], b"another context"), SealedJson(["new"], b"one context")):
        with pytest.raises(InvalidToken):
            other.open(old)


@pytest.fixture(scope="module")
def provider() -> Iterator[OAuthProvider]:
    with OAuthProvider(access_token_seconds=5) as served:
        yield served


@pytest.fixture(scope="module")
def closed_provider() -> Iterator[OAuthProvider]:
    """A provider that registers no clients: only those it was given."""
    with OAuthProvider(dynamic_registration=False) as served:
        yield served


@pytest.fixture
async def vaults() -> AsyncIterator[list[Connections]]:
    made: list[Connections] = []
    yield made
    for vault in made:
        await vault.aclose()


def vault_for(
    store: ConnectionStore,
    servers: dict[str, McpServer],
    made: list[Connections],
    env: dict[str, str] | None = None,
) -> Connections:
    vault = Connections(
        store, TokenBox(["k"]), servers, env or {}, callback_url=CALLBACK, base_url=BASE
    )
    made.append(vault)
    return vault


async def test_a_provider_down_during_a_refresh_is_an_error_and_the_connection_stays(
    provider: OAuthProvider,
    store: ConnectionStore,
    browser: httpx.AsyncClient,
    vaults: list[Connections],
) -> None:
    vault = vault_for(store, notes(provider), vaults)
    await connect(vault, provider, browser, "alice")
    token = await vault.access_token("alice", "notes")
    assert token is not None
    stored = await store.get("alice", "notes")
    assert stored is not None
    refresh = TokenBox(["k"]).open(stored.sealed)[0]["refresh_token"]
    await vault.invalidate("alice", "notes", token)
    provider.outage = True
    try:
        with pytest.raises(ConnectionFailed) as failed:
            await vault.access_token("alice", "notes")
    finally:
        provider.outage = False
    message = str(failed.value)
    assert message.startswith('MCP server "notes": its token endpoint')
    assert "503" in message
    assert token not in message
    assert refresh not in message
    # The claim to refresh was released: the next use refreshes at once.
    fresh = await vault.access_token("alice", "notes")
    assert fresh is not None
    assert fresh != token


async def test_a_server_without_registration_needs_a_configured_client(
    closed_provider: OAuthProvider, store: ConnectionStore, vaults: list[Connections]
) -> None:
    vault = vault_for(store, notes(closed_provider), vaults)
    request = await vault.begin("alice", "notes")
    with pytest.raises(ConnectionFailed, match='set "client_id"'):
        await vault.redirect(request.flow_id)


async def test_a_missing_variable_of_a_configured_client_is_named(
    provider: OAuthProvider, store: ConnectionStore, vaults: list[Connections]
) -> None:
    oauth = McpOAuth(client_id="${NOTES_ID}", client_secret="${NOTES_SECRET}")
    vault = vault_for(store, notes(provider, oauth), vaults, env={"NOTES_ID": "agentctl"})
    request = await vault.begin("alice", "notes")
    with pytest.raises(UserError, match="NOTES_SECRET"):
        await vault.redirect(request.flow_id)


async def test_an_unreachable_server_is_named_without_its_secrets(
    store: ConnectionStore, vaults: list[Connections]
) -> None:
    server = McpServer(
        name="gone",
        transport="http",
        url="http://127.0.0.1:9/mcp?key=${GONE_KEY}",
        env_names=("GONE_KEY",),
        oauth=McpOAuth(),
    )
    vault = vault_for(store, {"gone": server}, vaults, env={"GONE_KEY": "s3cret/value"})
    request = await vault.begin("alice", "gone")
    with pytest.raises(ConnectionFailed, match=r'MCP server "gone": http://127.0.0.1:9/mcp') as e:
        await vault.redirect(request.flow_id)
    assert "s3cret" not in str(e.value)
    assert "key=***" in str(e.value)


def test_secrets_sealed_under_a_whole_key_with_a_comma_still_open() -> None:
    # Before keys could be listed, AGENTCTL_SECRETS_KEY sealed whole, commas and all.
    sealed = SecretBox(["a,b"]).seal({"OPENAI_API_KEY": "sk-1"})
    assert SecretBox(key_material("a,b")).open(sealed) == {"OPENAI_API_KEY": "sk-1"}
