"""A real agent server on an ephemeral port, driven by the official langgraph-sdk client."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agentctl.project import load_project
from agentctl.server import Server, create_app
from agentctl.server.embedded import open_embedded_server
from agentctl.server.http import uvicorn_config
from agentctl.testing import ScriptedModelServer

# model_server, calc_port, library_port and demo are in tests/conftest.py.


@pytest.fixture(autouse=True)
def _model_env(model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in model_server.env.items():
        monkeypatch.setenv(name, value)


@dataclass
class Running:
    url: str
    server: Server
    client: LangGraphClient


@asynccontextmanager
async def running_server(
    project_root: Path, data_dir: Path, **options: Any
) -> AsyncIterator[Running]:
    """Serve the project on 127.0.0.1 and a free port, in this event loop."""
    server = await open_embedded_server(load_project(project_root), "rev-1", data_dir, **options)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    uv = uvicorn.Server(uvicorn_config(create_app(server), log_level="warning", loop="asyncio"))
    task = asyncio.create_task(uv.serve(sockets=[sock]))
    while not uv.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    url = f"http://127.0.0.1:{port}"
    client = get_client(url=url, api_key=None)
    try:
        yield Running(url, server, client)
    finally:
        await client.http.client.aclose()
        uv.should_exit = True
        await task
        sock.close()


@pytest.fixture
async def agent(demo: Path, tmp_path: Path) -> AsyncIterator[Running]:
    async with running_server(demo, tmp_path / "data") as running:
        yield running


@pytest.fixture
async def http(agent: Running) -> AsyncIterator[httpx.AsyncClient]:
    """A plain HTTP client on the server, for requests the SDK would never send."""
    async with httpx.AsyncClient(base_url=agent.url) as client:
        yield client


async def assert_json_error(
    http: httpx.AsyncClient, method: str, path: str, body: bytes, status: int, detail: str
) -> None:
    """`body` sent as JSON gets `status` and a JSON `detail` containing `detail`."""
    response = await http.request(
        method, path, content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert detail in response.json()["detail"]


def user(script: str) -> dict[str, Any]:
    """The input of a run: one user message (directives for the scripted model)."""
    return {"messages": [{"role": "user", "content": script}]}


def call(tool: str, **args: Any) -> str:
    return f"@call {tool} {json.dumps(args)}"
