"""The URLs the server gives out (the A2A agent card's, `/info`'s): the configured public
URL's, or else the request's — whose `Host` any client may forge, so then no cache may keep
the answer for others (cache poisoning)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentctl.errors import SettingsError
from agentctl.server.production import open_agent_server
from agentctl.settings import Settings
from agentctl.testing import ScriptedModelServer
from tests.server.conftest import PLATFORM_KEY, PLATFORM_OPERATOR, deploy, platform_at

CARD = "/.well-known/agent-card.json"
FORGED = {"Host": "evil.example"}
PUBLIC = "https://agents.example.com"


def settings_of(tmp_path: Path, **env: str) -> Settings:
    data = str(tmp_path / "platform")
    return Settings.from_env({"PLATFORM_API_KEY": PLATFORM_KEY, "AGENTCTL_DATA_DIR": data, **env})


def urls_in(value: object) -> set[str]:
    """Every URL a JSON document names."""
    if isinstance(value, dict):
        return set().union(*(urls_in(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(urls_in(item) for item in value))
    return {value} if isinstance(value, str) and "://" in value else set()


async def test_urls_from_a_forged_host_are_never_cached(
    tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    async with platform_at(settings_of(tmp_path)) as (_, http):
        await deploy(http, tmp_path / "alpha", "alpha", model_server, "You are alpha.")
        await deploy(http, tmp_path / "beta", "beta", model_server, "You are beta.")
        for path in (CARD, "/info", "/a2a/alpha" + CARD):
            answer = await http.get(f"/agents/alpha{path}", headers=FORGED | PLATFORM_OPERATOR)
            assert answer.status_code == 200, (path, answer.text)
            assert "evil.example" in answer.text  # the request's URL, as before...
            assert answer.headers["cache-control"] == "no-store", path  # ...kept by no cache
            assert answer.headers["vary"].startswith("Host"), path
        listed = await http.get("/info", headers=FORGED)  # the platform's, its agents listed
        assert listed.json()["agents"][0]["url"] == "http://evil.example/agents/alpha"
        assert listed.headers["cache-control"] == "no-store"


async def test_the_public_url_names_the_server_whatever_the_host(
    tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    settings = settings_of(tmp_path, AGENTCTL_PUBLIC_URL=f"{PUBLIC}/")
    async with platform_at(settings) as (_, http):
        await deploy(http, tmp_path / "alpha", "alpha", model_server, "You are alpha.")
        assistant_id = (await http.get("/agents/alpha/info")).json()["assistant_id"]
        card = await http.get(f"/agents/alpha{CARD}", headers=FORGED)
        assert urls_in(card.json()) == {f"{PUBLIC}/agents/alpha/a2a/{assistant_id}"}
        assert card.headers["cache-control"] == "public, max-age=300"
        assert card.headers["vary"] == "A2A-Version"  # not Host: the URLs are the public ones
        # The only agent also answers at the root: its card names that URL.
        root = await http.get(CARD, headers=FORGED)
        assert urls_in(root.json()) == {f"{PUBLIC}/a2a/{assistant_id}"}
        info = await http.get("/agents/alpha/info", headers=FORGED)
        assert info.json()["url"] == f"{PUBLIC}/agents/alpha"
        assert "evil.example" not in info.text
        assert "cache-control" not in info.headers


@pytest.mark.parametrize("url", ["agents.example.com", "ftp://agents.example.com", "https://"])
async def test_serve_refuses_a_public_url_clients_cannot_reach(tmp_path: Path, url: str) -> None:
    with pytest.raises(SettingsError, match=r"AGENTCTL_PUBLIC_URL: .* https://host\[:port\]"):
        await open_agent_server(settings_of(tmp_path, AGENTCTL_PUBLIC_URL=url))
