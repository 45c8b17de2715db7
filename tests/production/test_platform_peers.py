"""Agents calling agents on a platform of two replicas over PostgreSQL + Redis: an agent's
mcp.json names another agent, which it calls in-process as its user; each agent's own MCP
endpoint answers the official `mcp` client at its URL."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from agentctl.testing.identity import OidcIssuer
from tests.production.conftest import Cluster, agent_project, agent_serving
from tests.server.conftest import ALICE, BOB, call, sdk, user, with_auth


async def test_an_agent_calls_another_in_cluster_as_its_user(
    cluster: Cluster, tmp_path: Path, oidc: OidcIssuer
) -> None:
    first, second = cluster.start(), cluster.start()

    sso = {"provider": "oidc", "issuer": oidc.issuer, "audience": oidc.audience}
    researcher = with_auth(
        agent_project(tmp_path / "r", "researcher"), tmp_path / "researcher", sso
    )
    asker = agent_project(tmp_path / "a", "asker")
    servers = {"research": {"agent": "researcher"}}  # no url: in-cluster only
    (asker / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    asker = with_auth(asker, tmp_path / "asker", sso)
    for folder in (researcher, asker):
        deployed = cluster.deploy(folder, first)
        assert deployed.exit_code == 0, deployed.err + deployed.out
    assert "research (agent researcher)" in deployed.out + deployed.err
    for name in ("researcher", "asker"):
        await agent_serving(second, name, 1)

    url = f"{second.url}/agents"
    alice, bob = oidc.mint(ALICE), oidc.mint(BOB)
    alice_at_asker = sdk(f"{url}/asker", token=alice)
    alice_at_researcher = sdk(f"{url}/researcher", token=alice)
    bob_at_researcher = sdk(f"{url}/researcher", token=bob)
    try:
        thread_id = str(uuid.uuid4())
        ask = call("researcher", message="@say found it", thread_id=thread_id)
        values: Any = await alice_at_asker.runs.wait(
            None, "asker", input=user(f"{ask}\n@say {{last_tool_result}}")
        )
        assert values["messages"][-1]["content"] == "found it"
        # The conversation the call held at researcher is Alice's there, not Bob's.
        held: Any = await alice_at_researcher.threads.get(thread_id)
        assert held["metadata"]["owner"] == ALICE
        assert await bob_at_researcher.threads.search() == []

        # researcher's own MCP endpoint, at its URL on the platform, with the official client.
        async with (
            httpx.AsyncClient(headers={"Authorization": f"Bearer {alice}"}, timeout=30) as http,
            streamable_http_client(f"{url}/researcher/mcp", http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert [t.name for t in (await session.list_tools()).tools] == ["researcher"]
            result = await session.call_tool("researcher", {"message": "@say direct"})
            assert [b.text for b in result.content if isinstance(b, TextContent)] == ["direct"]
    finally:
        for client in (alice_at_asker, alice_at_researcher, bob_at_researcher):
            await client.aclose()
