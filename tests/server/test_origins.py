"""Browsers: CORS for the pages allowed to call the server, and the refusal of any other
page's requests (HTTP and WebSocket), of foreign `Host` names on `agentctl dev`, before
authentication; and request bodies read as JSON whatever their content type."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
import websockets
from starlette.types import Receive, Scope, Send

from agentctl.errors import SettingsError
from agentctl.server.origins import (
    MAX_LOGGED_REFUSALS,
    STUDIO_ORIGIN,
    OriginGuard,
    OriginPolicy,
)
from agentctl.server.production import check_platform_settings, open_agent_server
from agentctl.settings import Settings
from tests.conftest import RunCli
from tests.server.conftest import ALICE, Running, TwoUsers, running_server, user

FOREIGN = "https://evil.example"
PAGE = "http://localhost:3000"  # a UI on this machine, e.g. agent-chat-ui under `next dev`
CHAT = "https://chat.example.com"
SDK_HEADERS = [
    "authorization", "content-type", "x-api-key", "x-auth-scheme", "last-event-id",
    "cache-control", "accept", "x-request-id", "prefer",
]  # fmt: skip
RUN = {"assistant_id": "demo", "input": user("hello")}


def preflight(origin: str, method: str = "POST") -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": ", ".join(SDK_HEADERS),
    }


def assert_refused(response: httpx.Response, what: str) -> None:
    assert response.status_code == 403, response.text
    assert response.headers["content-type"] == "application/json"
    assert what in response.json()["detail"]
    assert "access-control-allow-origin" not in response.headers


async def run_count(running: Running) -> int:
    return sum((await running.server.storage.runs.count_by_status()).values())


@pytest.fixture
async def chat(demo: Path, tmp_path: Path) -> AsyncIterator[Running]:
    """`agentctl dev --cors-origin https://chat.example.com`."""
    policy = OriginPolicy.for_dev([CHAT])
    async with running_server(demo, tmp_path / "data", origins=policy) as running:
        yield running


async def test_preflights_of_allowed_pages_are_answered_on_every_path(
    http: httpx.AsyncClient,
) -> None:
    for path in ("/threads/search", "/runs/stream", "/store/items", "/mcp", "/nowhere"):
        response = await http.options(path, headers=preflight(PAGE))
        assert response.status_code == 204, (path, response.text)
        assert response.headers["access-control-allow-origin"] == PAGE
        allowed = response.headers["access-control-allow-headers"].lower()
        assert all(header in allowed for header in SDK_HEADERS)
        methods = response.headers["access-control-allow-methods"]
        assert {"GET", "POST", "PUT", "PATCH", "DELETE"} <= set(methods.split(", "))
        # A page of this machine is allowed by pattern, not by name: no credentials.
        assert "access-control-allow-credentials" not in response.headers
    studio = await http.options("/threads/search", headers=preflight(STUDIO_ORIGIN))
    assert studio.headers["access-control-allow-origin"] == STUDIO_ORIGIN
    for loopback in ("http://127.0.0.1:5173", "http://[::1]:8080"):
        response = await http.options("/assistants/search", headers=preflight(loopback))
        assert response.headers["access-control-allow-origin"] == loopback


async def test_allowed_pages_read_what_the_sdks_read(
    agent: Running, http: httpx.AsyncClient
) -> None:
    await agent.client.threads.create()
    response = await http.post("/threads/search", json={"limit": 1}, headers={"Origin": PAGE})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == PAGE
    assert "origin" in response.headers["vary"].lower()
    exposed = response.headers["access-control-expose-headers"].lower()
    for header in ("location", "content-location", "x-pagination-next", "x-pagination-total"):
        assert header in exposed


async def test_foreign_pages_are_refused_before_anything_runs(
    agent: Running, http: httpx.AsyncClient
) -> None:
    refused = await http.options("/threads/search", headers=preflight(FOREIGN))
    assert_refused(refused, "origin 'https://evil.example' may not call this server")
    # A JSON body sent as text/plain needs no preflight: the request itself is refused.
    for path in ("/runs/wait", "/runs", "/a2a/demo"):
        response = await http.post(
            path,
            content=json.dumps(RUN),
            headers={"Origin": FOREIGN, "Content-Type": "text/plain"},
        )
        assert_refused(response, "--cors-origin")
    a2a = {
        "jsonrpc": "2.0", "id": 1, "method": "message/send",
        "params": {"message": {"role": "user", "messageId": "m", "kind": "message",
                               "parts": [{"kind": "text", "text": "hi"}]}},
    }  # fmt: skip
    response = await http.post(
        "/a2a/demo",
        content=json.dumps(a2a),
        headers={"Origin": FOREIGN, "Content-Type": "text/plain"},
    )
    assert_refused(response, "may not call")
    mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = await http.post(
        "/mcp",
        json=mcp,
        headers={"Origin": FOREIGN, "Accept": "application/json, text/event-stream"},
    )
    assert_refused(response, "may not call")
    response = await http.get(
        "/threads/00000000-0000-0000-0000-000000000000", headers={"Origin": "null"}
    )
    assert_refused(response, "may not call")
    assert await run_count(agent) == 0
    # Without Origin (curl, the Python and Node SDKs) nothing changes.
    assert (await http.post("/runs/wait", json=RUN)).status_code == 200


async def test_foreign_host_names_are_refused_on_dev(
    agent: Running, http: httpx.AsyncClient
) -> None:
    # A page on a name that resolves to 127.0.0.1 (DNS rebinding) sends no Origin on a GET.
    port = agent.url.rsplit(":", 1)[1]
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.2:{port}"):
        response = await http.get(
            "/threads/00000000-0000-0000-0000-000000000000", headers={"Host": host}
        )
        assert_refused(response, "is not served here")
    mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = await http.post(
        "/mcp",
        json=mcp,
        headers={"Host": f"evil.example:{port}", "Accept": "application/json, text/event-stream"},
    )
    assert_refused(response, "is not served here")
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "LOCALHOST"):
        assert (await http.get("/info", headers={"Host": host})).status_code == 200


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "agentctl.server"]


async def test_refusals_are_logged_once_with_what_allows_the_page(
    agent: Running, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    # The refused page reads nothing but a CORS failure (agent-chat-ui says "Failed to connect
    # to LangGraph server"): the server's console is where the developer learns why.
    caplog.set_level(logging.WARNING, logger="agentctl.server")
    lan = "http://192.168.1.5:3000"  # the Network address `next dev` prints
    port = agent.url.rsplit(":", 1)[1]
    for _ in range(3):
        assert_refused(await http.options("/threads/search", headers=preflight(lan)), "may not")
        assert_refused(await http.get("/info", headers={"Origin": lan}), "may not call")
        assert_refused(await http.get("/info", headers={"Origin": "null"}), "may not call")
        host = await http.get("/info", headers={"Host": f"evil.example:{port}"})
        assert_refused(host, "is not served here")
    assert (await http.get("/info", headers={"Origin": PAGE})).status_code == 200
    assert (await http.get("/info")).status_code == 200
    assert refusals(caplog) == [
        f"refused (403) a page at {lan} may not call this server: to let it, restart "
        f"`agentctl dev` with --cors-origin {lan}",
        "refused (403) a page of origin 'null' may not call this server: serve it over http(s)",
        f"refused (403) host 'evil.example:{port}' is not served here — use localhost, "
        "127.0.0.1 or [::1], or the address given to --host",
    ]
    # A page sending ever new origins cannot grow the log (or the memory) without bound.
    caplog.clear()
    for n in range(MAX_LOGGED_REFUSALS + 5):
        await http.get("/info", headers={"Origin": f"https://x{n}.example"})
    assert len(refusals(caplog)) == MAX_LOGGED_REFUSALS - 3


@pytest.mark.slow
async def test_serve_logs_the_setting_that_allows_a_refused_page(
    demo: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="agentctl.server")
    async with (
        running_server(demo, tmp_path / "data", origins=OriginPolicy(frozenset({CHAT}))) as running,
        httpx.AsyncClient(base_url=running.url) as http,
    ):
        assert_refused(await http.post("/runs/wait", json=RUN, headers={"Origin": PAGE}), "may")
    assert refusals(caplog) == [
        f"refused (403) a page at {PAGE} may not call this server: to let it, add it to "
        "AGENTCTL_CORS_ORIGINS (comma-separated)"
    ]


async def test_a_bound_address_is_a_host_of_dev_and_all_addresses_any() -> None:
    assert "192.168.1.5" in (OriginPolicy.for_dev(bind_host="192.168.1.5").hosts or ())
    assert "[fd00::1]" in (OriginPolicy.for_dev(bind_host="fd00::1").hosts or ())
    everywhere = OriginPolicy.for_dev(["http://chat.lan:3000"], bind_host="0.0.0.0")
    for name in ("localhost", "192.168.1.5", "[fd00::1]", "chat.lan", socket.gethostname()):
        assert everywhere.serves(name.lower()), name
    assert not everywhere.serves("rebound.example.com")  # a DNS rebinding page's name
    assert OriginPolicy().hosts is None  # serve: behind a proxy, under any name


async def test_listed_origins_get_credentials_and_others_still_refused(chat: Running) -> None:
    async with httpx.AsyncClient(base_url=chat.url) as http:
        response = await http.options("/runs/stream", headers=preflight(CHAT))
        assert response.status_code == 204
        assert response.headers["access-control-allow-origin"] == CHAT
        assert response.headers["access-control-allow-credentials"] == "true"
        ok = await http.post("/runs/wait", json=RUN, headers={"Origin": CHAT})
        assert ok.status_code == 200
        assert ok.headers["access-control-allow-credentials"] == "true"
        refused = await http.post(
            "/runs/wait", json=RUN, headers={"Origin": "https://chat.example.org"}
        )
        assert_refused(refused, "may not call")


@pytest.mark.slow
async def test_serve_allows_no_page_but_its_own_unless_listed(demo: Path, tmp_path: Path) -> None:
    async with (
        running_server(demo, tmp_path / "data", origins=OriginPolicy()) as running,
        httpx.AsyncClient(base_url=running.url) as http,
    ):
        assert_refused(await http.options("/runs", headers=preflight(PAGE)), "may not call")
        refused = await http.post("/runs/wait", json=RUN, headers={"Origin": PAGE})
        assert_refused(refused, "may not call")
        # Its own pages (e.g. /docs) are not cross-site.
        own = await http.post("/runs/wait", json=RUN, headers={"Origin": running.url})
        assert own.status_code == 200
        assert "access-control-allow-origin" not in own.headers
    wildcard = OriginPolicy(frozenset({"*"}))
    async with (
        running_server(demo, tmp_path / "data", origins=wildcard) as running,
        httpx.AsyncClient(base_url=running.url) as http,
    ):
        response = await http.options("/runs", headers=preflight(FOREIGN))
        assert response.headers["access-control-allow-origin"] == FOREIGN
        assert "access-control-allow-credentials" not in response.headers


async def test_preflights_need_no_token_with_auth(two_users: TwoUsers) -> None:
    token = two_users.idp.mint(ALICE)
    async with httpx.AsyncClient(base_url=two_users.running.url) as http:
        response = await http.options("/threads/search", headers=preflight(PAGE))
        assert response.status_code == 204
        assert response.headers["access-control-allow-origin"] == PAGE
        signed_in = {"Authorization": f"Bearer {token}"}
        found = await http.post("/threads/search", json={}, headers={"Origin": PAGE, **signed_in})
        assert found.status_code == 200
        assert found.headers["access-control-allow-origin"] == PAGE
        # The page still needs the token; a 401 carries CORS headers, so the page can read it.
        anonymous = await http.post("/threads/search", json={}, headers={"Origin": PAGE})
        assert anonymous.status_code == 401
        assert anonymous.headers["access-control-allow-origin"] == PAGE
        assert_refused(await http.options("/threads/search", headers=preflight(FOREIGN)), "may not")
        foreign = await http.post("/runs/wait", json=RUN, headers={"Origin": FOREIGN, **signed_in})
        assert_refused(foreign, "may not call")


@pytest.mark.parametrize("content_type", ["text/plain", None, "application/x-www-form-urlencoded"])
async def test_json_bodies_are_read_whatever_their_content_type(
    agent: Running, content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    async with httpx.AsyncClient(base_url=agent.url, timeout=30) as http:
        for origin in (None, PAGE):
            sent = headers | ({"Origin": origin} if origin else {})
            response = await http.post("/runs/wait", content=json.dumps(RUN), headers=sent)
            assert response.status_code == 200, response.text
            assert response.json()["messages"][-1]["content"] == "scripted reply to: hello"
        bad = await http.post("/runs/wait", content=b"{not json", headers=headers)
        assert bad.status_code == 422
        assert "not valid JSON" in bad.json()["detail"]


@asynccontextmanager
async def guarded_websocket(policy: OriginPolicy) -> AsyncIterator[str]:
    """A tiny WebSocket echo app behind `OriginGuard`, on uvicorn: its URL."""

    async def echo(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            return
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        message = await receive()
        await send({"type": "websocket.send", "text": message.get("text", "")})
        await send({"type": "websocket.close"})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(OriginGuard(echo, policy), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"ws://127.0.0.1:{port}/threads/x/stream"
    finally:
        server.should_exit = True
        await task
        sock.close()


async def test_websockets_of_foreign_pages_are_refused() -> None:
    # No WebSocket route is served yet: the guard is tested on an echo app of its own.
    async with guarded_websocket(OriginPolicy.for_dev()) as url:
        async with websockets.connect(url, origin=PAGE) as ws:  # type: ignore[arg-type]
            await ws.send("hi")
            assert await ws.recv() == "hi"
        async with websockets.connect(url) as ws:  # no Origin: not a browser
            await ws.send("hi")
            assert await ws.recv() == "hi"
        for headers in ({"Origin": FOREIGN}, {"Origin": PAGE, "Host": "evil.example"}):
            with pytest.raises(websockets.InvalidStatus) as refused:
                async with websockets.connect(url, additional_headers=headers):
                    pass
            assert refused.value.response.status_code == 403


async def test_serve_reads_its_origins_from_the_environment(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {"PLATFORM_API_KEY": "k", "AGENTCTL_CORS_ORIGINS": "https://a.example, chat.example.com"}
    )
    with pytest.raises(SettingsError, match=r"AGENTCTL_CORS_ORIGINS: 'chat\.example\.com' is not"):
        await open_agent_server(settings)


def test_dev_refuses_a_malformed_origin(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("dev", "--cors-origin", "https://chat.example.com/app", cwd=tmp_path)
    assert result.exit_code == 2
    assert "--cors-origin" in result.err
    assert "is not an origin" in result.err


PUBLIC = "https://agents.example.com"


def rebound(url: str) -> dict[str, str]:
    """What a page at http://evil.example:<port> sends once its name resolves to the server
    (DNS rebinding): that `Host`, and that very origin."""
    port = url.rsplit(":", 1)[1]
    return {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}


async def test_a_rebinding_page_is_refused_on_serve_with_anonymous_access(
    demo: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="agentctl.server")
    env = {"PLATFORM_API_KEY": "k", "AGENTCTL_PUBLIC_URL": f"{PUBLIC}/"}
    policy, _ = check_platform_settings(Settings.from_env(env))
    async with (
        running_server(demo, tmp_path / "data", origins=policy) as running,  # anonymous
        httpx.AsyncClient(base_url=running.url) as http,
    ):
        page = rebound(running.url)
        refused = await http.post("/runs/wait", json=RUN, headers=page)
        assert_refused(refused, "is not this server's public URL")
        assert f"set AGENTCTL_PUBLIC_URL to {page['Origin']}" in refused.json()["detail"]
        asked = await http.options(
            "/runs", headers=page | {"Access-Control-Request-Method": "POST"}
        )
        assert_refused(asked, "is not this server's public URL")
        assert refusals(caplog) == [
            f"refused (403) a page at {page['Origin']} may not call this server: if that is "
            f"its address, set AGENTCTL_PUBLIC_URL to {page['Origin']}"
        ]
        assert await run_count(running) == 0
        # Nor may it read: a browser marks its same-origin GETs, which carry no Origin.
        same_origin = {"Host": page["Host"], "Sec-Fetch-Site": "same-origin"}
        assert_refused(await http.get("/info", headers=same_origin), "host 'evil.example' is")
        assert_refused(await http.get("/threads/x", headers=same_origin), "(DNS rebinding)")
        port = running.url.rsplit(":", 1)[1]
        for host in ("agents.example.com", f"127.0.0.1:{port}"):  # its own pages read
            own = await http.get("/info", headers={"Host": host, "Sec-Fetch-Site": "same-origin"})
            assert own.status_code == 200, own.text
        assert (await http.get("/info", headers={"Host": page["Host"]})).status_code == 200
        # The deployment's own pages, at its public URL, under whatever Host a proxy passes.
        for host in ("agents.example.com", f"127.0.0.1:{running.url.rsplit(':', 1)[1]}"):
            own = await http.post("/runs/wait", json=RUN, headers={"Origin": PUBLIC, "Host": host})
            assert own.status_code == 200, own.text
            assert "access-control-allow-origin" not in own.headers
        # And at an address no other page can be served under.
        assert (await http.post("/runs/wait", json=RUN, headers={"Origin": running.url})).is_success


async def test_a_rebinding_page_is_refused_on_dev(agent: Running, http: httpx.AsyncClient) -> None:
    refused = await http.post("/runs/wait", json=RUN, headers=rebound(agent.url))
    assert_refused(refused, "host 'evil.example:")
    assert await run_count(agent) == 0
