"""`agentctl deploy` and `rollback` on a platform of replicas over PostgreSQL + Redis return
once every live replica serves the revision: a client calling another replica right after
gets it, even when loading a revision takes seconds; a replica that cannot load it is named,
with why (exit 3), and a replica that died is not waited for."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from starlette.types import ASGIApp, Receive, Scope, Send

from agentctl.testing.mcp_servers import calculator, serve
from agentctl.testing.replicas import Replica
from tests.production.conftest import Cluster, agent_client, agent_project, said

LOADING_DELAY = 0.5  # each request to the agents' MCP server: a revision loads in seconds


class Slow:
    """An ASGI app answering each HTTP request `delay` seconds late."""

    def __init__(self, app: ASGIApp, delay: float) -> None:
        self.app, self.delay = app, delay

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await asyncio.sleep(self.delay)
        await self.app(scope, receive, send)


def with_tools(folder: Path, name: str, mcp_url: str) -> Path:
    agent_project(folder, name)
    (folder / "mcp.json").write_text(json.dumps({"mcpServers": {"calc": {"url": mcp_url}}}))
    return folder


async def served(replica: Replica, name: str) -> Any:
    """The revision number `replica` serves of agent `name` (its /info), or the status."""
    async with httpx.AsyncClient(base_url=f"{replica.url}/agents/{name}") as http:
        answer = await http.get("/info")
    return answer.json()["revision_number"] if answer.status_code == 200 else answer.status_code


async def test_a_deploy_returns_once_every_replica_serves_it(
    cluster: Cluster, tmp_path: Path
) -> None:
    with serve(Slow(calculator().streamable_http_app(), LOADING_DELAY)) as port:
        mcp_url = f"http://127.0.0.1:{port}/mcp"
        first, second = cluster.start(), cluster.start()
        for k in range(2):
            name = f"agent-{k}"
            folder = with_tools(tmp_path / name, name, mcp_url)
            other = agent_client(second, name)
            for number in (1, 2):  # a new agent, then a new revision of it
                (folder / "AGENTS.md").write_text(f"You are {name}, revision {number}.\n")
                deployed = cluster.deploy(folder, first)
                assert deployed.exit_code == 0, deployed.err + deployed.out
                # At once, on the replica the deploy did not go through.
                assert await served(second, name) == number
                assert await said(other, name, f"hi {number}") == f"hi {number}"
            rolled = cluster.deploy(folder, first, "rollback", "--agent", name, "1")
            assert rolled.exit_code == 0, rolled.err + rolled.out
            assert await served(second, name) == 1
            await other.aclose()


async def test_a_deploy_names_the_replicas_that_do_not_serve_it(
    cluster: Cluster, tmp_path: Path
) -> None:
    first = cluster.start()
    # A replica that cannot open the revisions' secrets (another key), and one that died.
    odd = cluster.start(AGENTCTL_SECRETS_KEY="not-the-key-of-the-others")
    dead = cluster.start()
    dead.kill()
    deployed = cluster.deploy(agent_project(tmp_path / "lone", "lone"), first)
    assert deployed.exit_code == 3, deployed.err + deployed.out
    assert "error: revision 1 of agent lone is active, but 1 of 2 live replicas" in deployed.err
    assert f":{odd.process.pid}:" in deployed.err
    assert "the deployed secrets cannot be decrypted with this server's key" in deployed.err
    assert f":{dead.process.pid}:" not in deployed.err
    # The revision is active, and served where it can be.
    assert await served(first, "lone") == 1
    assert await served(odd, "lone") is None  # no revision it can serve


async def test_a_deploy_names_a_gate_on_a_tool_the_agent_lacks(
    cluster: Cluster, tmp_path: Path
) -> None:
    # With an MCP server, the gates are checked once it listed its tools: when replicas load it.
    with serve(calculator().streamable_http_app()) as port:
        replica = cluster.start()
        folder = with_tools(tmp_path / "gated", "gated", f"http://127.0.0.1:{port}/mcp")
        with (folder / "agent.toml").open("a") as toml:
            toml.write("\n[interrupt_on]\naddd = true\n")
        deployed = cluster.deploy(folder, replica)
    # The replica the upload reaches loads the revision first, and refuses it.
    assert deployed.exit_code == 1, deployed.err + deployed.out
    assert (
        "error: the platform refused the request: agent.toml: [interrupt_on]: addd is not a "
        "tool of this agent — did you mean add? "
        "Or gate one of its tools instead: add, delete, "
    ) in deployed.err
    assert "Traceback" not in deployed.err
