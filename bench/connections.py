"""The latency a user's connection adds to a tool call: the same MCP server and tool
(`whoami` of the loopback notes server, which checks every token with its provider), called
by two agents served as `agentctl dev` serves them:

- agent-owned: the token in mcp.json's headers (from .env), as before connections existed;
- user-owned: `"oauth": {}`, the user connected once; each call opens the user's sealed
  connection, checks its expiry and sends that user's token.

Each run is one model step calling the tool and one answering (the scripted model), through
the official SDK; then the tool call alone, in the server's process. The agents take turns,
so that whatever else the machine does weighs on both alike; the difference of the medians
is what the connection adds (opening the user's sealed token set, checking its expiry).

    .venv/bin/python bench/connections.py [--runs 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from langgraph_sdk import get_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import QUIET_ENV, p95, user_input

from agentctl.project import load_project
from agentctl.runtime.mcp_tools import load_mcp_tools
from agentctl.server.app import create_app
from agentctl.server.context import Server
from agentctl.server.embedded import open_embedded_server
from agentctl.server.http import uvicorn_config
from agentctl.testing import ScriptedModelServer
from agentctl.testing.consent import consent
from agentctl.testing.identity import IdpBServer
from agentctl.testing.oauth_provider import OAuthProvider, running_oauth_provider

SCRIPT = "@call whoami {}\n@say {last_tool_result}"


def project(root: Path, name: str, server: dict[str, Any], env: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    (root / "agent.toml").write_text(
        f'[agent]\nname = "{name}"\nmodel = "openai:scripted"\n[auth]\nprovider = "idp_b"\n'
    )
    (root / "AGENTS.md").write_text("You answer.\n")
    (root / ".env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    (root / "mcp.json").write_text(json.dumps({"mcpServers": {"notes": server}}))
    return root


@asynccontextmanager
async def serving(root: Path, data: Path) -> AsyncIterator[tuple[str, str, Server]]:
    """The agent at `root` on a free port: its URL, assistant id and server."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = await open_embedded_server(load_project(root), "rev-1", data, public_url=url)
    uv = uvicorn.Server(uvicorn_config(create_app(server), server.limits, log_level="warning"))
    task = asyncio.create_task(uv.serve(sockets=[sock]))
    while not uv.started:
        await asyncio.sleep(0.01)
    try:
        yield url, server.deployment.assistant_id, server
    finally:
        uv.should_exit = True
        await task
        sock.close()


async def connect(url: str, token: str, provider: OAuthProvider, user: str) -> None:
    """`user` connects notes, as the console's page of the request does."""
    async with httpx.AsyncClient() as browser:
        started = await browser.post(
            f"{url}/connections/notes/authorize", headers={"Authorization": f"Bearer {token}"}
        )
        link = started.json()["authorization_url"]
        done = await consent(browser, link, token, provider, user)
        assert done.status_code == 200, done.text


async def one_run(client: Any, assistant: str) -> float:
    started = time.perf_counter()
    values: Any = await client.runs.wait(None, assistant, input=user_input(SCRIPT))
    elapsed = time.perf_counter() - started
    assert "alice" in str(values["messages"][-1]["content"]), values
    return elapsed


async def timed_runs(
    agents: dict[str, tuple[str, str, Server]], token: str, runs: int
) -> dict[str, list[float]]:
    """`runs` runs on each agent (name -> url, assistant, server), taking turns so that whatever
    else the machine does weighs on both alike; three first runs each warm up."""
    headers = {"Authorization": f"Bearer {token}"}
    clients = {
        name: get_client(url=url, api_key=None, headers=headers)
        for name, (url, _, _) in agents.items()
    }
    times: dict[str, list[float]] = {name: [] for name in agents}
    try:
        for index in range(runs + 3):
            for name, (_, assistant, _) in agents.items():
                elapsed = await one_run(clients[name], assistant)
                if index >= 3:
                    times[name].append(elapsed)
    finally:
        for client in clients.values():
            await client.aclose()
    return times


async def timed_calls(owned: Server, connected: Server, calls: int) -> dict[str, list[float]]:
    """The tool call each agent makes, taking turns: the agent-owned tool as the revision
    loaded it (langchain-mcp-adapters, a session per call), and the user's call as the
    middleware makes it (the connection opened, then a session per call)."""
    project = owned.deployment.runtime.project
    listed = await load_mcp_tools(project.mcp_servers, project.env)
    [tool] = [t for t in listed if t.name == "whoami"]
    connections = connected.deployment.runtime.connections
    assert connections is not None, "the connected agent has a user-owned server"
    times: dict[str, list[float]] = {"agent-owned headers": [], "user-owned (connected)": []}
    for index in range(calls + 3):
        started = time.perf_counter()
        await tool.ainvoke({})
        middle = time.perf_counter()
        result = await connections.call_tool("alice", "notes", "whoami", {})
        ended = time.perf_counter()
        assert result is not None
        if index >= 3:
            times["agent-owned headers"].append(middle - started)
            times["user-owned (connected)"].append(ended - middle)
    return times


async def main(runs: int) -> None:
    with ScriptedModelServer() as model, IdpBServer() as idp, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {**idp.env, **model.env, **QUIET_ENV, "OPENAI_API_KEY": "sk-bench"}
        async with running_oauth_provider() as provider:
            # An agent-owned credential: a token of alice's the provider issued for the server.
            issued = provider.auth._issue(
                client_id="bench", scopes=["notes.read"], resource=provider.mcp_url,
                subject="alice", grant="bench",
            )  # fmt: skip
            owned = {"url": provider.mcp_url, "headers": {"Authorization": "Bearer ${NOTES}"}}
            agent_owned = project(folder / "agent-owned", "agent-owned", owned,
                                  {**env, "NOTES": issued.access_token})  # fmt: skip
            user_owned = project(folder / "user-owned", "user-owned",
                                 {"url": provider.mcp_url, "oauth": {}}, env)  # fmt: skip
            token = idp.mint("alice", expires_in=3600)
            async with (
                serving(agent_owned, folder / "a-data") as first,
                serving(user_owned, folder / "u-data") as second,
            ):
                await connect(second[0], token, provider, "alice")
                agents = {"agent-owned headers": first, "user-owned (connected)": second}
                results = await timed_runs(agents, token, runs)
                calls = await timed_calls(first[2], second[2], runs * 3)
    report(f"a run calling notes.whoami once, through the SDK: {runs} runs each", results)
    report(f"the tool call alone, in the server's process: {runs * 3} calls each", calls)


def report(title: str, results: dict[str, list[float]]) -> None:
    print(f"{title} (ms)")
    print(f"  {'':26} {'median':>8} {'p95':>8}")
    for name, times in results.items():
        print(f"  {name:26} {statistics.median(times) * 1000:8.2f} {p95(times) * 1000:8.2f}")
    owned, connected = results.values()
    added = statistics.median(connected) - statistics.median(owned)
    print(f"  added by the user's connection (median): {added * 1000:+.2f} ms per tool call")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    asyncio.run(main(parser.parse_args().runs))
