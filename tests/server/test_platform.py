"""The platform of agents of `agentctl serve`, in process on SQLite: deploys create agents,
each served at /agents/<name> apart from the others, the root's routes, deletion; a broken
revision is refused on SQLite and PostgreSQL alike."""

from __future__ import annotations

import base64
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from agentctl.bundle.revision import build_revision
from agentctl.project import load_project
from agentctl.server.dispatch import open_platform
from agentctl.server.platform_host import Platform
from agentctl.server.production import open_agent_server
from agentctl.settings import Settings
from agentctl.storage.base import Thread, UserConnection
from agentctl.testing import ScriptedModelServer
from tests.server.conftest import (
    PLATFORM_KEY,
    PLATFORM_OPERATOR,
    agent_files,
    deploy,
    platform_at,
)

KEY = PLATFORM_KEY
OPERATOR = PLATFORM_OPERATOR
KEPT = "0b7f6a4e-9a7e-4c59-8d1e-1c2b3a4d5e6f"


async def test_agents_are_served_apart_at_their_own_urls(
    platform: tuple[Platform, httpx.AsyncClient],
    tmp_path: Path,
    model_server: ScriptedModelServer,
) -> None:
    hosting, http = platform
    empty = (await http.get("/info")).json()
    assert empty["agents"] == []
    assert (await http.get("/platform/agents")).status_code == 401
    assert (await http.get("/platform/agents", headers=OPERATOR)).json() == []

    alpha = await deploy(http, tmp_path / "alpha", "alpha", model_server, "You are alpha.")
    assert (alpha["agent"], alpha["number"], alpha["url"]) == (
        "alpha", 1, "http://platform/agents/alpha")  # fmt: skip
    # One agent: the root is still that agent's, as before the platform hosted several.
    assert (await http.get("/info")).json()["agent"] == "alpha"
    assert (await http.post("/threads/search", json={}, headers=OPERATOR)).status_code == 200
    await deploy(http, tmp_path / "beta", "beta", model_server, "You are beta.")
    again = await deploy(http, tmp_path / "alpha", "alpha", model_server, "You are alpha 2.")
    assert again["number"] == 2  # the agent's own revisions

    listed = (await http.get("/platform/agents", headers=OPERATOR)).json()
    assert [(a["name"], a["active_revision"], a["runs_in_flight"]) for a in listed] == [
        ("alpha", 2, 0), ("beta", 1, 0)]  # fmt: skip
    assert listed[1]["url"] == "http://platform/agents/beta"
    info = (await http.get("/agents/beta/info")).json()
    assert (info["agent"], info["url"], info["revision_number"]) == (
        "beta", "http://platform/agents/beta", 1)  # fmt: skip
    assert [a["name"] for a in (await http.get("/info")).json()["agents"]] == ["alpha", "beta"]

    several = await http.post("/threads/search", json={}, headers=OPERATOR)
    assert several.status_code == 404
    assert "several agents" in several.json()["detail"]
    unknown = await http.get("/agents/gamma/info")
    assert unknown.status_code == 404
    assert unknown.json()["detail"].startswith("no agent 'gamma' on this platform")

    # Nothing of one agent is visible through another.
    thread = (await http.post("/agents/alpha/threads", json={}, headers=OPERATOR)).json()
    tid = thread["thread_id"]
    assert (await http.get(f"/agents/alpha/threads/{tid}", headers=OPERATOR)).status_code == 200
    assert (await http.get(f"/agents/beta/threads/{tid}", headers=OPERATOR)).status_code == 404

    # The docs, the schema and the console live under the agent's URL.
    docs = await http.get("/agents/alpha/docs")
    assert 'src="docs/docs.js"' in docs.text  # relative: /agents/alpha/docs/docs.js
    assert (await http.get("/agents/alpha/docs/docs.js")).status_code == 200
    schema = (await http.get("/agents/alpha/openapi.json")).json()
    assert schema["servers"][0]["url"] == "/agents/alpha"
    console = await http.get("/agents/alpha/ui")
    assert (console.status_code, console.headers["location"]) == (308, "ui/")
    assert (await http.get("/agents/alpha/ui/")).status_code == 200

    metrics = await http.get("/metrics", headers=OPERATOR)
    assert 'agent="alpha"' in metrics.text
    assert 'agent="beta"' in metrics.text

    # Per-agent revisions and rollback.
    revisions = (await http.get("/platform/agents/alpha/revisions", headers=OPERATOR)).json()
    assert [(r["number"], r["active"]) for r in revisions] == [(2, True), (1, False)]
    rolled = await http.post("/platform/agents/alpha/revisions/1/activate", headers=OPERATOR)
    assert rolled.json()["active"] is True
    assert hosting.agents["alpha"].server.deployment.number == 1
    assert hosting.agents["beta"].server.deployment.number == 1

    at = datetime.now(UTC)
    connection = UserConnection("ann", "notes", b"sealed", ("notes.read",), None, at, at)
    await hosting.agents["beta"].server.storage.connections.put(connection, expected_version=None)
    deleted = await http.delete("/platform/agents/beta", headers=OPERATOR)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["deleted"]["assistants"] == 1
    assert deleted.json()["deleted"]["connections"] == 1
    assert not Path(deleted.json()["folder"]).exists()
    assert (await http.get("/agents/beta/info")).status_code == 404
    assert (await http.delete("/platform/agents/beta", headers=OPERATOR)).status_code == 404
    # One agent again: the root is its.
    assert (await http.get("/info")).json()["agent"] == "alpha"


async def test_an_agent_served_before_the_platform_keeps_its_data(
    tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    settings = Settings.from_env({"PLATFORM_API_KEY": KEY, "AGENTCTL_DATA_DIR": str(tmp_path)})
    before = await open_agent_server(settings)  # the server of before, in the default storage
    assert before.deployments is not None
    root = tmp_path / "old"
    root.mkdir()
    (root / "agent.toml").write_text('[agent]\nname = "old"\nmodel = "openai:scripted"\n')
    (root / "AGENTS.md").write_text("# Old\n\nYou are old.\n")
    secrets = {**model_server.env, "OPENAI_API_KEY": "sk-old"}
    await before.deployments.upload(
        build_revision(load_project(root, environ=secrets)).archive, secrets
    )
    await before.storage.threads.create(Thread(thread_id=KEPT))
    await before.stop()

    platform, app = await open_platform(settings)
    await platform.start()
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://platform") as http:
            assert platform.agents["old"].record.namespace is None
            kept = await http.get(f"/agents/old/threads/{KEPT}", headers=OPERATOR)
            assert kept.status_code == 200, kept.text
            assert (await http.get("/info")).json()["revision_number"] == 1
            refused = await http.delete("/platform/agents/old", headers=OPERATOR)
            assert refused.status_code == 409
            assert "default storage" in refused.json()["detail"]
    finally:
        await platform.stop()


async def test_an_agent_name_in_the_url_is_decoded_once(
    platform: tuple[Platform, httpx.AsyncClient],
    tmp_path: Path,
    model_server: ScriptedModelServer,
) -> None:
    _, http = platform
    await deploy(http, tmp_path / "alpha", "alpha", model_server, "You are alpha.")
    assert (await http.get("/agents/%61lpha/info")).json()["agent"] == "alpha"
    # `%2561` is `%61` once decoded, not `a`: no agent of that name.
    twice = await http.get("/agents/%2561lpha/info")
    assert twice.status_code == 404
    assert twice.json()["detail"].startswith("no agent '%61lpha' on this platform")
    assert (
        await http.post("/agents/%2561lpha/threads", json={}, headers=OPERATOR)
    ).status_code == 404


@pytest.fixture(params=["sqlite", "postgres"])
def any_platform_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """A platform's settings on SQLite, or on PostgreSQL + Redis as `agentctl serve` runs."""
    env = {"PLATFORM_API_KEY": KEY, "AGENTCTL_DATA_DIR": str(tmp_path / "platform")}
    if request.param == "postgres":
        env["DATABASE_URL"] = request.getfixturevalue("database_url")
        env["REDIS_URL"] = request.getfixturevalue("redis_server_url")
        env["AGENTCTL_REDIS_PREFIX"] = request.getfixturevalue("redis_prefix")
    return Settings.from_env(env)


async def test_a_revision_with_nul_in_agent_toml_is_refused_naming_it(
    any_platform_settings: Settings, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    """An archive `agentctl deploy` would not build (it validates first), sent anyway."""
    root = agent_files(tmp_path / "nul", "nul", "You are nul.")
    secrets = {**model_server.env, "OPENAI_API_KEY": "sk-nul"}
    project = load_project(root, environ=secrets)
    toml = project.contents["agent.toml"] + b'[sandbox]\nimage = "a\\u0000b"\n'
    broken = replace(
        project,
        contents={**project.contents, "agent.toml": toml},
        sandbox=replace(project.sandbox, image="a\x00b"),
    )
    archive = build_revision(broken).archive
    body = {"archive": base64.b64encode(archive).decode(), "secrets": secrets}
    async with platform_at(any_platform_settings) as (_, http):
        answer = await http.post("/platform/revisions", json=body, headers=OPERATOR)
        assert answer.status_code == 422, answer.text
        assert "agent.toml: [sandbox].image: holds the NUL character" in answer.json()["detail"]
        assert (await http.get("/platform/agents", headers=OPERATOR)).json() == []
