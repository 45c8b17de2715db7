"""The CLI of a platform of agents against real `agentctl serve` replicas: `agents`, deploy's
URL and created/updated, `revisions` and `rollback` choosing the agent, and `delete`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from agentctl.testing.replicas import Replica
from tests.conftest import chat_project, eventually
from tests.production.conftest import KEY, Cluster

DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"


def agent_info(replica: Replica, name: str) -> httpx.Response:
    return httpx.get(f"{replica.url}/agents/{name}/info", headers={"x-api-key": KEY})


async def serving(replica: Replica, name: str, number: int) -> None:
    async def switched() -> bool:
        answer = agent_info(replica, name)
        return answer.status_code == 200 and answer.json()["revision_number"] == number

    await eventually(switched, 10, f"agent {name} to serve revision {number}")


def projects(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Projects `alpha` and `beta`, and a folder with no project."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return (
        chat_project(tmp_path / "alpha", "alpha"),
        chat_project(tmp_path / "beta", "beta"),
        elsewhere,
    )


async def test_deploy_creates_then_updates_and_agents_lists_them(
    cluster: Cluster, tmp_path: Path
) -> None:
    first, second = cluster.start(), cluster.start()
    alpha, beta, elsewhere = projects(tmp_path)
    assert cluster.deploy(elsewhere, first, "agents").out.startswith("no agent deployed yet")

    created = cluster.deploy(alpha, first)
    assert created.exit_code == 0, created.err
    assert "Deployed revision 1 of agent alpha (created, " in created.out
    assert f"  URL   {first.url}/agents/alpha\n" in created.out
    assert f"curl -s {first.url}/agents/alpha/runs/wait " in created.out
    updated = cluster.deploy(alpha, first)
    assert "Deployed revision 2 of agent alpha (updated, " in updated.out, updated.err
    assert "of agent beta (created, " in cluster.deploy(beta, second).out
    await serving(second, "alpha", 2)
    await serving(first, "beta", 1)

    table = cluster.deploy(elsewhere, second, "agents")
    assert table.exit_code == 0, table.err
    header, *rows = table.out.splitlines()
    assert header.split() == ["agent", "revision", "deployed", "at", "runs", "url"]
    assert re.fullmatch(rf"alpha +2  {DATE} +0  {second.url}/agents/alpha", rows[0]), rows
    assert re.fullmatch(rf"beta +1  {DATE} +0  {second.url}/agents/beta", rows[1]), rows
    listed = json.loads(cluster.deploy(elsewhere, second, "agents", "--json").out)
    assert [(a["name"], a["active_revision"]) for a in listed] == [("alpha", 2), ("beta", 1)]
    assert {a["url"] for a in listed} == {f"{second.url}/agents/alpha", f"{second.url}/agents/beta"}


async def test_revisions_and_rollback_choose_the_agent(cluster: Cluster, tmp_path: Path) -> None:
    replica = cluster.start()
    alpha, beta, elsewhere = projects(tmp_path)
    assert cluster.deploy(alpha, replica).exit_code == 0
    assert cluster.deploy(elsewhere, replica, "revisions").exit_code == 0  # the only agent
    (alpha / "AGENTS.md").write_text("You are the second revision.\n")
    assert cluster.deploy(alpha, replica).exit_code == 0
    assert cluster.deploy(beta, replica).exit_code == 0

    several = cluster.deploy(elsewhere, replica, "revisions")
    assert several.exit_code == 1
    assert "hosts 2 agents (alpha, beta) — choose one with --agent NAME" in several.err
    assert cluster.deploy(elsewhere, replica, "rollback").exit_code == 1

    own = cluster.deploy(alpha, replica, "revisions")  # the agent of ./agent.toml
    assert own.exit_code == 0, own.err
    assert own.out.startswith(f"agent alpha  {replica.url}/agents/alpha\n")
    assert re.search(rf"^\*    2  \w{{12}}  {DATE}  openai:scripted$", own.out, re.M), own.out
    assert re.search(r"^     1  ", own.out, re.M)
    other = json.loads(cluster.deploy(alpha, replica, "revisions", "--agent", "beta", "--json").out)
    assert [(r["number"], r["agent"], r["active"]) for r in other] == [(1, "beta", True)]

    missing = cluster.deploy(alpha, replica, "rollback", "9")
    assert missing.exit_code == 1
    assert "agent 'alpha' has no revision 9 — `agentctl revisions --agent alpha`" in missing.err
    unknown = cluster.deploy(elsewhere, replica, "rollback", "--agent", "gamma", "1")
    assert unknown.exit_code == 1
    assert "no agent named 'gamma' (its agents: alpha, beta)" in unknown.err
    assert cluster.deploy(beta, replica, "rollback").exit_code == 1  # beta has one revision

    rolled = cluster.deploy(alpha, replica, "rollback")
    assert rolled.exit_code == 0, rolled.err
    assert "Revision 1 of agent alpha is active" in rolled.out
    await serving(replica, "alpha", 1)
    await serving(replica, "beta", 1)
    again = cluster.deploy(elsewhere, replica, "rollback", "--agent", "alpha", "2")
    assert "Revision 2 of agent alpha is active" in again.out, again.err
    await serving(replica, "alpha", 2)


async def test_delete_asks_for_the_name_then_says_what_went(
    cluster: Cluster, tmp_path: Path
) -> None:
    replica = cluster.start()
    alpha, beta, elsewhere = projects(tmp_path)
    assert cluster.deploy(alpha, replica).exit_code == 0
    assert cluster.deploy(beta, replica).exit_code == 0

    wrong = cluster.deploy(elsewhere, replica, "delete", "beta", input="alpha\n")
    assert wrong.exit_code == 1
    warning = f"Deleting agent beta ({replica.url}/agents/beta) deletes its revisions, secrets"
    assert warning in wrong.err
    assert "crons, store items and memory, users' connections to MCP servers, and sandboxes" in (
        wrong.err
    )
    assert "Type the agent's name to delete it" in wrong.err
    assert "error: 'alpha' is not 'beta': nothing deleted" in wrong.err
    assert agent_info(replica, "beta").status_code == 200
    nothing = cluster.deploy(elsewhere, replica, "delete", "beta")  # end of input: no answer
    assert nothing.exit_code == 130
    assert nothing.err.endswith("Type the agent's name to delete it: aborted\n")
    assert agent_info(replica, "beta").status_code == 200

    unknown = cluster.deploy(elsewhere, replica, "delete", "gamma", "--yes")
    assert unknown.exit_code == 1
    assert "no agent named 'gamma' (its agents: alpha, beta)" in unknown.err

    deleted = cluster.deploy(elsewhere, replica, "delete", "beta", input="beta\n")
    assert deleted.exit_code == 0, deleted.err
    assert deleted.out.startswith("Deleted agent beta\n")
    for counted in ("threads", "runs", "assistants", "crons", "connections"):
        assert re.search(rf"^  {counted} +\d+$", deleted.out, re.M), deleted.out
    assert agent_info(replica, "beta").status_code == 404
    names = [
        a["name"] for a in json.loads(cluster.deploy(elsewhere, replica, "agents", "--json").out)
    ]
    assert names == ["alpha"]
    # The only agent left is the one `revisions` means.
    assert cluster.deploy(elsewhere, replica, "revisions").out.startswith("agent alpha  ")

    forced = cluster.deploy(elsewhere, replica, "delete", "alpha", "--yes")
    assert forced.exit_code == 0, forced.err
    assert "Type the agent's name" not in forced.err
    assert "Deleted agent alpha" in forced.out
    assert cluster.deploy(elsewhere, replica, "agents").out.startswith("no agent deployed yet")
