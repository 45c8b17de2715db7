"""`agentctl dev` with a user-owned MCP server: users connect at the dev server's own
address, the sealing key is made once in the data folder, and a reload keeps connections."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client

from agentctl.server.devloop import DATA_DIR
from agentctl.testing.consent import consent
from agentctl.testing.identity import IdpBServer
from agentctl.testing.oauth_provider import running_oauth_provider
from agentctl.testing.services import free_port
from tests.dev_process import StartDev
from tests.server.conftest import call, user
from tests.server.test_user_connections import notes_project
from tests.test_dev import edit

WHOAMI = f"{call('whoami')}\n@say I am {{last_tool_result}}"


async def test_dev_serves_connections_across_reloads(
    tmp_path: Path, start_dev: StartDev, idp_b: IdpBServer
) -> None:
    async with running_oauth_provider() as provider:
        root = notes_project(tmp_path / "notes-agent", provider, idp_b)
        dev = start_dev("--config", root / "agent.toml", "--port", free_port())
        url = dev.ready()
        alice = idp_b.mint("alice", expires_in=600)
        token = {"Authorization": f"Bearer {alice}"}
        async with httpx.AsyncClient() as browser:
            started = await browser.post(f"{url}/connections/notes/authorize", headers=token)
            link = started.json()["authorization_url"]
            assert link.startswith(f"{url}/ui/#/connect/")  # at the dev server's own address
            assert (await consent(browser, link, alice, provider, "alice")).status_code == 200
        key = root / DATA_DIR / "secrets.key"
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        async with get_client(url=url, api_key=None, headers=token) as client:
            values: Any = await client.runs.wait(None, "notes-agent", input=user(WHOAMI))
            assert values["messages"][-1]["content"] == "I am alice"
            edit(dev, root / "AGENTS.md", "You keep the user's notes, carefully.\n")
            values = await client.runs.wait(None, "notes-agent", input=user(WHOAMI))
            assert values["messages"][-1]["content"] == "I am alice"
        assert dev.stop() == 0
        assert "Traceback" not in dev.err
