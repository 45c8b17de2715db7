"""The platform of agents of `agentctl serve`, in process on SQLite: deploys create agents,
each served at /agents/<name> apart from the others, the root's routes, deletion."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentctl.bundle.revision import build_revision
from agentctl.project import load_project
from agentctl.server.dispatch import open_platform
from agentctl.server.platform_host import Platform
from agentctl.settings import Settings
from agentctl.testing import ScriptedModelServer

KEY = "pk-platform-dispatch-0123456789"
OPERATOR = {"x-api-key": KEY}


@pytest.fixture
async def platform(tmp_path: Path) -> AsyncIterator[tuple[Platform, httpx.AsyncClient]]:
    settings = Settings.from_env({"PLATFORM_API_KEY": KEY, "AGENTCTL_DATA_DIR": str(tmp_path)})
    platform, app = await open_platform(settings)
    await platform.start()
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://platform") as http:
            yield platform, http
    finally:
        await platform.stop()


async def deploy(
    http: httpx.AsyncClient, root: Path, name: str, model: ScriptedModelServer, text: str
) -> dict[str, Any]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.toml").write_text(f'[agent]\nname = "{name}"\nmodel = "openai:scripted"\n')
    (root / "AGENTS.md").write_text(f"# {name}\n\n{text}\n")
    secrets = {**model.env, "OPENAI_API_KEY": f"sk-{name}"}
    archive = build_revision(load_project(root, environ=secrets)).archive
    body = {"archive": base64.b64encode(archive).decode(), "secrets": secrets}
    answer = await http.post("/platform/revisions", json=body, headers=OPERATOR)
    assert answer.status_code == 201, answer.text
    view: dict[str, Any] = answer.json()
    return view


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
    assert "/agents/alpha/openapi.json" in docs.text
    schema = (await http.get("/agents/alpha/openapi.json")).json()
    assert schema["servers"][0]["url"] == "/agents/alpha"
    console = await http.get("/agents/alpha/ui")
    assert (console.status_code, console.headers["location"]) == (308, "ui/")
    assert (await http.get("/agents/alpha/ui/")).status_code == 200

    metrics = await http.get("/metrics", headers=OPERATOR)
    assert 'agent="alpha"' in metrics.text and 'agent="beta"' in metrics.text

    # Per-agent revisions and rollback.
    revisions = (await http.get("/platform/agents/alpha/revisions", headers=OPERATOR)).json()
    assert [(r["number"], r["active"]) for r in revisions] == [(2, True), (1, False)]
    rolled = await http.post("/platform/agents/alpha/revisions/1/activate", headers=OPERATOR)
    assert rolled.json()["active"] is True
    assert hosting.agents["alpha"].server.deployment.number == 1
    assert hosting.agents["beta"].server.deployment.number == 1

    deleted = await http.delete("/platform/agents/beta", headers=OPERATOR)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["deleted"]["assistants"] == 1
    assert not Path(deleted.json()["folder"]).exists()
    assert (await http.get("/agents/beta/info")).status_code == 404
    assert (await http.delete("/platform/agents/beta", headers=OPERATOR)).status_code == 404
    # One agent again: the root is its.
    assert (await http.get("/info")).json()["agent"] == "alpha"
