"""A real agent server on an ephemeral port, driven by the official langgraph-sdk client."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import socket
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError

from agentctl.bundle.revision import build_revision
from agentctl.project import load_project
from agentctl.server.app import create_app
from agentctl.server.context import Server
from agentctl.server.dispatch import open_platform
from agentctl.server.embedded import open_embedded_server
from agentctl.server.http import uvicorn_config
from agentctl.server.platform_host import Platform
from agentctl.settings import Settings
from agentctl.testing import ScriptedModelServer
from agentctl.testing.identity import IdpBServer, OidcIssuer

# model_server, calc_port, library_port and demo are in tests/conftest.py.


@pytest.fixture(autouse=True)
def _model_env(model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in model_server.env.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(autouse=True)
def _environ_untouched(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No server, agent or tool writes to the process environment: a project's variables
    go to its runtime only. (What the test set with `monkeypatch` is undone first.)"""
    saved = environ_now()
    yield
    monkeypatch.undo()
    assert environ_now() == saved, "the process environment was changed"


def environ_now() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


# An id nothing has, for requests that must find nothing. Test ids hold it, so it is fixed:
# pytest-xdist's workers must collect the same tests.
UNKNOWN_ID = "00000000-0000-4000-8000-00000000dead"


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
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    options.setdefault("public_url", f"http://127.0.0.1:{port}")
    try:
        server = await open_embedded_server(
            load_project(project_root), "rev-1", data_dir, **options
        )
    except BaseException:
        sock.close()
        raise
    app = create_app(server)
    uv = uvicorn.Server(uvicorn_config(app, server.limits, log_level="warning", loop="asyncio"))
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


GATED = '[agent]\nname = "gated"\nmodel = "openai:scripted"\n[interrupt_on]\nwrite_file = true\n'


def write_gated(root: Path) -> Path:
    """An agent whose `write_file` waits for approval, with a subagent `helper`."""
    root.mkdir(parents=True)
    (root / "agent.toml").write_text(GATED)
    (root / "AGENTS.md").write_text("Gated.\n")
    (root / "subagents/helper").mkdir(parents=True)
    (root / "subagents/helper/agent.toml").write_text(
        '[agent]\nname = "helper"\ndescription = "Helps"\n'
    )
    (root / "subagents/helper/AGENTS.md").write_text("You help.\n")
    return root


@pytest.fixture
async def gated(tmp_path: Path) -> AsyncIterator[Running]:
    async with running_server(write_gated(tmp_path / "gated"), tmp_path / "gated-data") as running:
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


def error_detail(caught: pytest.ExceptionInfo[APIStatusError]) -> str:
    """The `detail` of the error the SDK raised (its body is typed `object`: any JSON)."""
    body = caught.value.body
    assert isinstance(body, dict), body
    return str(body["detail"])


def user(script: str) -> dict[str, Any]:
    """The input of a run: one user message (directives for the scripted model)."""
    return {"messages": [{"role": "user", "content": script}]}


def call(tool: str, **args: Any) -> str:
    return f"@call {tool} {json.dumps(args)}"


# -- signed-in users (the loopback identity providers are in tests/conftest.py) ------------


def with_auth(
    project: Path, dest: Path, auth: Mapping[str, str], env: Mapping[str, str] | None = None
) -> Path:
    """A copy of `project` at `dest` with an `[auth]` section holding `auth` (e.g.
    ``{"provider": "idp_b"}``) and `env` (the provider's variables) added to its `.env`."""
    shutil.copytree(project, dest)
    config = dest / "agent.toml"
    section = "".join(f"{key} = {json.dumps(value)}\n" for key, value in auth.items())
    config.write_text(config.read_text() + "\n[auth]\n" + section)
    with (dest / ".env").open("a") as dotenv:
        dotenv.writelines(f"{name}={value}\n" for name, value in (env or {}).items())
    return dest


def console_auth(oidc: OidcIssuer, client_id: str = "agentctl-console") -> dict[str, str]:
    """`[auth]` on `oidc`, with the public client the web console signs in with."""
    return {
        "provider": "oidc",
        "issuer": oidc.issuer,
        "audience": oidc.audience,
        "client_id": client_id,
    }


def sdk(
    url: str,
    *,
    token: str | None = None,
    api_key: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> LangGraphClient:
    """An official SDK client sending `token` as a Bearer token and `api_key` as the
    deployment key (neither when None); close it with ``client.aclose()``."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    return get_client(url=url, api_key=api_key, headers=sent)


ALICE = "alice@example.com"  # an id that needs escaping in store namespaces
BOB = "bob"


@dataclass
class TwoUsers:
    """A server of the demo with `[auth] provider = "idp_b"`, and each user's SDK client."""

    running: Running
    idp: IdpBServer
    alice: LangGraphClient
    bob: LangGraphClient
    exit: AsyncExitStack

    def client(self, **options: Any) -> LangGraphClient:
        """Another SDK client on the server (options of `sdk`), closed with the others."""
        client = sdk(self.running.url, **options)
        self.exit.push_async_callback(client.aclose)
        return client


@pytest.fixture
async def two_users(demo: Path, tmp_path: Path, idp_b: IdpBServer) -> AsyncIterator[TwoUsers]:
    project = with_auth(demo, tmp_path / "signed-in", {"provider": "idp_b"}, idp_b.env)
    async with (
        running_server(project, tmp_path / "signed-in-data") as running,
        AsyncExitStack() as stack,
    ):
        users = TwoUsers(running, idp_b, running.client, running.client, stack)
        users.alice = users.client(token=idp_b.mint(ALICE))
        users.bob = users.client(token=idp_b.mint(BOB))
        yield users


# -- the platform of `agentctl serve`, in process on SQLite -----------------------------------

PLATFORM_KEY = "pk-platform-dispatch-0123456789"
PLATFORM_OPERATOR = {"x-api-key": PLATFORM_KEY}


@pytest.fixture
def platform_settings(tmp_path: Path) -> Settings:
    data = tmp_path / "platform"
    return Settings.from_env({"PLATFORM_API_KEY": PLATFORM_KEY, "AGENTCTL_DATA_DIR": str(data)})


@asynccontextmanager
async def platform_at(settings: Settings) -> AsyncIterator[tuple[Platform, httpx.AsyncClient]]:
    """A started platform and an HTTP client of its application (in process)."""
    platform, app = await open_platform(settings)
    await platform.start()
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://platform") as http:
            yield platform, http
    finally:
        await platform.stop()


@pytest.fixture
async def platform(
    platform_settings: Settings,
) -> AsyncIterator[tuple[Platform, httpx.AsyncClient]]:
    async with platform_at(platform_settings) as started:
        yield started


def agent_files(root: Path, name: str, text: str) -> Path:
    """A project of agent `name` on the scripted model, AGENTS.md saying `text`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.toml").write_text(f'[agent]\nname = "{name}"\nmodel = "openai:scripted"\n')
    (root / "AGENTS.md").write_text(f"# {name}\n\n{text}\n")
    return root


async def upload(
    http: httpx.AsyncClient, root: Path, model: ScriptedModelServer, **more: str
) -> httpx.Response:
    """`POST /platform/revisions` of the project at `root`, as `agentctl deploy` sends it
    (with the variables `more` too)."""
    secrets = {**model.env, "OPENAI_API_KEY": f"sk-{root.name}", **more}
    archive = build_revision(load_project(root, environ=secrets)).archive
    body = {"archive": base64.b64encode(archive).decode(), "secrets": secrets}
    return await http.post("/platform/revisions", json=body, headers=PLATFORM_OPERATOR)


async def deploy(
    http: httpx.AsyncClient, root: Path, name: str, model: ScriptedModelServer, text: str
) -> dict[str, Any]:
    answer = await upload(http, agent_files(root, name, text), model)
    assert answer.status_code == 201, answer.text
    view: dict[str, Any] = answer.json()
    return view
