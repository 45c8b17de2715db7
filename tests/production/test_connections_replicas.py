"""Users' connections on `agentctl serve` replicas over PostgreSQL and Redis: a consent flow
begun by a run on one replica ends through the other's callback, and the run goes on."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentctl.testing.consent import consent
from agentctl.testing.identity import IdpBServer
from agentctl.testing.oauth_provider import OAuthProvider, running_oauth_provider
from agentctl.testing.replicas import start_replica
from tests.conftest import eventually
from tests.production.conftest import OPERATOR, Cluster, serving
from tests.server.conftest import call, user

pytestmark = pytest.mark.slow

WHOAMI = f"{call('connect_notes')}\n{call('whoami')}\n@say I am {{last_tool_result}}"


def notes_project(root: Path, provider: OAuthProvider, idp: IdpBServer) -> Path:
    root.mkdir(parents=True)
    (root / "agent.toml").write_text(
        '[agent]\nname = "demo"\nmodel = "openai:scripted"\n[auth]\nprovider = "idp_b"\n'
    )
    (root / "AGENTS.md").write_text("You keep the user's notes.\n")
    (root / ".env").write_text("".join(f"{k}={v}\n" for k, v in idp.env.items()))
    server = {"url": provider.mcp_url, "description": "Your notes", "oauth": {}}
    (root / "mcp.json").write_text(json.dumps({"mcpServers": {"notes": server}}))
    return root


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_a_flow_begun_on_one_replica_ends_on_the_other(
    cluster: Cluster, tmp_path: Path, idp_b: IdpBServer
) -> None:
    port = free_port()
    public = f"http://127.0.0.1:{port}"  # the second replica's address: where browsers go
    async with running_oauth_provider() as provider:
        project = notes_project(tmp_path / "notes", provider, idp_b)
        first = cluster.start(AGENTCTL_PUBLIC_URL=public)
        second = start_replica(
            {**cluster.env, "AGENTCTL_PUBLIC_URL": public},
            cluster.folder / "replica-public",
            port=port,
        )
        cluster.replicas.append(second)
        deployed = cluster.deploy(project, first)
        assert deployed.exit_code == 0, deployed.err + deployed.out
        await serving(second, 1)
        carol = cluster.client(first, api_key=None, headers=bearer(idp_b.mint("carol")))
        thread_id = (await carol.threads.create())["thread_id"]
        waiting: Any = await carol.runs.wait(thread_id, "demo", input=user(WHOAMI))
        value = waiting["__interrupt__"][0]["value"]
        assert value["type"] == "connection_required"
        url = value["authorization_url"]
        base = f"{public}/agents/demo"  # the platform's agent, at the public URL
        assert url.startswith(f"{base}/ui/#/connect/")  # the console's page, on the platform
        async with httpx.AsyncClient() as browser:
            done = await consent(browser, url, idp_b.mint("carol"), provider, "carol")
            assert done.status_code == 200, done.text

        async def idle() -> Any:
            thread: Any = await carol.threads.get(thread_id)
            return thread["status"] == "idle" and thread

        thread = await eventually(idle, 30, "the resumed run")
        assert thread["values"]["messages"][-1]["content"] == "I am carol"
        auth = provider.auth
        tokens = [*auth.access_tokens, *auth.refresh_tokens]
        # The operator's run (the deployment key) has no user: a tool error says so.
        operator_client = cluster.client(second)
        script = f"{call('whoami')}\n@say {{last_tool_result}}"
        said: Any = await operator_client.runs.wait(None, "demo", input=user(script))
        assert "__interrupt__" not in said
        assert "started with the deployment key" in said["messages"][-1]["content"]
        await operator_client.aclose()
        with cluster.connect() as conn:  # kept sealed: never in plaintext
            rows = "".join(str(row) for row in conn.execute("SELECT * FROM user_connections"))
        assert "carol" in rows
        assert not any(secret in rows for secret in tokens)
        # Revoked through one replica: gone on the other too, whose next call asks again.
        async with httpx.AsyncClient(
            base_url=f"{first.url}/agents/demo", headers=bearer(idp_b.mint("carol"))
        ) as http:
            assert (await http.delete("/connections/notes")).status_code == 204
        elsewhere = cluster.client(second, api_key=None, headers=bearer(idp_b.mint("carol")))
        asked: Any = await elsewhere.runs.wait(None, "demo", input=user(WHOAMI))
        assert asked["__interrupt__"][0]["value"]["type"] == "connection_required"
        await elsewhere.aclose()
        await carol.aclose()
        async with httpx.AsyncClient(base_url=first.url, headers=OPERATOR) as operator:
            counts = (await operator.get("/connections")).json()
        assert counts == {"servers": [{"server": "notes", "description": "Your notes", "users": 0}]}
        # No token was ever in a replica's log (nor is any in the database: it is gone).
        with cluster.connect() as conn:
            rows = "".join(str(row) for row in conn.execute("SELECT * FROM user_connections"))
        assert not rows
        for secret in tokens:
            for replica in cluster.replicas:
                assert secret not in replica.output()


async def test_serve_needs_a_public_url_for_user_owned_servers(
    cluster: Cluster, tmp_path: Path, idp_b: IdpBServer
) -> None:
    async with running_oauth_provider() as provider:
        project = notes_project(tmp_path / "notes", provider, idp_b)
        replica = cluster.start()
        deployed = cluster.deploy(project, replica)
        assert deployed.exit_code != 0
        assert "AGENTCTL_PUBLIC_URL" in deployed.err + deployed.out
