"""The platform's overview (`GET /platform/overview`) on two replicas with two agents: every
agent with its active revision, its runs queued, running and failed, where its console is,
and the deploys across agents newest first; the deployment key only. The console that shows
it is served at the platform's root `/ui/` once it hosts several agents."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.production.conftest import (
    OPERATOR,
    Cluster,
    agent_client,
    agent_project,
    agent_serving,
)
from tests.server.conftest import user

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


def deploy(cluster: Cluster, folder: Path, name: str, replica: Any, version: int) -> None:
    project = agent_project(folder, name)
    (project / "AGENTS.md").write_text(f"You are {name}, version {version}.\n")
    deployed = cluster.deploy(project, replica)
    assert deployed.exit_code == 0, deployed.err + deployed.out


async def test_the_overview_shows_every_agent_and_the_deploys_across_them(
    cluster: Cluster, tmp_path: Path
) -> None:
    first, second = cluster.start(), cluster.start()
    deploy(cluster, tmp_path / "alpha", "alpha", first, 1)
    deploy(cluster, tmp_path / "beta", "beta", first, 1)
    deploy(cluster, tmp_path / "alpha", "alpha", first, 2)
    await agent_serving(second, "alpha", 2)
    await agent_serving(second, "beta", 1)
    alpha, beta = agent_client(second, "alpha"), agent_client(second, "beta")
    # Runs on threads (a thread-less run is deleted once done, and counted nowhere).
    done = await alpha.runs.wait(
        str(uuid.uuid4()), "alpha", input=user("@say fine"), if_not_exists="create"
    )
    assert done is not None
    await beta.runs.wait(
        str(uuid.uuid4()),
        "beta",
        if_not_exists="create",
        input=user("@fail 400 the model refused"),
        raise_error=False,
    )

    async with httpx.AsyncClient(base_url=second.url, headers=OPERATOR) as http:
        answer = await http.get("/platform/overview")
        assert answer.status_code == 200, answer.text
        overview = answer.json()
        usage = (await http.get("/platform/usage", params={"group_by": "agent"})).json()
        few = (await http.get("/platform/overview", params={"deploys": 2})).json()
        bad = await http.get("/platform/overview", params={"deploys": 0})
    agents = {agent["name"]: agent for agent in overview["agents"]}
    assert list(agents) == ["alpha", "beta"]
    assert agents["alpha"]["active_revision"]["number"] == 2
    assert agents["alpha"]["active_revision"]["active"] is True
    assert agents["beta"]["active_revision"]["number"] == 1
    assert agents["alpha"]["console_url"] == f"{second.url}/agents/alpha/ui/"
    assert agents["alpha"]["runs"]["success"] == 1
    assert agents["beta"]["runs"]["error"] == 1
    assert agents["beta"]["runs"]["pending"] == agents["beta"]["runs"]["running"] == 0
    assert overview["unservable"] == {}
    # Newest first, across agents; only the active one of each agent marked so.
    history = [(d["agent"], d["number"], d["active"]) for d in overview["deploys"]]
    assert history == [("alpha", 2, True), ("beta", 1, True), ("alpha", 1, False)]
    assert [d["agent"] for d in few["deploys"]] == ["alpha", "beta"]
    assert bad.status_code == 422
    assert "deploys" in bad.text
    assert {row["key"] for row in usage["rows"]} >= {"alpha"}

    # The deployment key only: without it, or with another, 401.
    async with httpx.AsyncClient(base_url=first.url) as http:
        assert (await http.get("/platform/overview")).status_code == 401
        wrong = await http.get("/platform/overview", headers={"x-api-key": "pk-not-the-key"})
        assert wrong.status_code == 401
        assert "pk-not-the-key" not in wrong.text
        # The console at the root is the platform's (public files, no data in them).
        page = await http.get("/ui/")
        assert page.status_code == 200
        assert "text/html" in page.headers["content-type"]
        assert "connect-src 'self';" in page.headers["content-security-policy"]
        assert (await http.get("/ui/console.js")).status_code == 200
        platform = (await http.get("/info")).json()
        assert platform["platform"] is True
        assert platform["credentials"] == {
            "bearer": False, "api_key": True, "anonymous": False, "oidc": None}  # fmt: skip
        # An agent's own console is still its own.
        agent_page = await http.get("/agents/alpha/ui/")
        assert agent_page.status_code == 200
    await alpha.aclose()
    await beta.aclose()
