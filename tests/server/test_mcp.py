"""`/mcp`: the agent as an MCP tool, driven by the official `mcp` client, by
langchain-mcp-adapters, by raw JSON-RPC and by another agent."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_mcp_adapters.client import MultiServerMCPClient
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS
from mcp.types import LATEST_PROTOCOL_VERSION, CallToolResult, TextContent

from agentctl import __version__
from agentctl.auth.idp_b import IdpBAuthenticator
from agentctl.server.access import AccessPolicy
from agentctl.server.routes.mcp import last_answer
from agentctl.storage.base import OWNER, Page, ThreadFilter
from agentctl.testing.identity import IdpBServer
from tests.server.conftest import Running, call, running_server, user

# What a client that speaks streamable HTTP sends with every POST.
JSON_RPC = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@asynccontextmanager
async def mcp_session(
    running: Running, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized session of the official client on the server's `/mcp`."""
    async with (
        httpx.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{running.url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


async def ask(session: ClientSession, message: str, thread_id: str | None = None) -> CallToolResult:
    arguments = {"message": message} | ({"thread_id": thread_id} if thread_id else {})
    return await session.call_tool("demo", arguments)


async def rpc(http: httpx.AsyncClient, body: Any, **headers: str) -> httpx.Response:
    """One raw JSON-RPC POST (a `bytes` body is sent as it is)."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await http.post("/mcp", content=content, headers=JSON_RPC | headers)


def payload(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of a response, whether sent as JSON or as one SSE event."""
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


def initialize(version: str, request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }


# -- the official client -----------------------------------------------------------------


async def test_initialize_list_and_call(agent: Running) -> None:
    async with (
        httpx.AsyncClient() as http,
        streamable_http_client(f"{agent.url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        assert init.protocolVersion == LATEST_PROTOCOL_VERSION
        assert (init.serverInfo.name, init.serverInfo.version) == ("demo", __version__)
        assert init.capabilities.tools is not None
        await session.send_ping()
        [tool] = (await session.list_tools()).tools
        assert tool.name == "demo"
        assert tool.description == "The demo agent."  # never AGENTS.md
        assert tool.inputSchema["required"] == ["message"]
        assert set(tool.inputSchema["properties"]) == {"message", "thread_id"}
        result = await ask(session, "@say hello from demo")
    assert not result.isError
    assert text_of(result) == "hello from demo"
    assert result.structuredContent is not None
    assert result.structuredContent["status"] == "success"
    threads, total = await agent.server.storage.threads.search(ThreadFilter(), Page(limit=100))
    assert total == 0, threads  # a call without thread_id is a stateless run


async def test_thread_id_makes_a_conversation(agent: Running) -> None:
    thread_id = str(uuid.uuid4())
    async with mcp_session(agent) as session:
        first = await ask(session, call("add", a=2, b=3) + "\n@say added", thread_id)
        assert text_of(first) == "added"
        assert first.structuredContent is not None
        assert first.structuredContent["thread_id"] == thread_id
        # The second turn's answer is the first turn's tool result: it saw the history.
        second = await ask(session, "@say the sum was {last_tool_result}", thread_id)
        assert text_of(second) == "the sum was 5"
        alone = await ask(session, "@say the sum was {last_tool_result}")
        assert text_of(alone) == "the sum was "
    state: Any = await agent.client.threads.get_state(thread_id)
    human = [m["content"] for m in state["values"]["messages"] if m["type"] == "human"]
    assert len(human) == 2


async def test_failures_are_tool_errors(agent: Running) -> None:
    async with mcp_session(agent) as session:
        failed = await ask(session, "@fail 400 the model refused")
        assert failed.isError
        assert "the model refused" in text_of(failed)
        not_uuid = await ask(session, "@say hi", thread_id="my-thread")
        assert not_uuid.isError
        assert "not a UUID" in text_of(not_uuid)
        wrong_type = await session.call_tool("demo", {"message": 5})
        assert wrong_type.isError
        assert "message" in text_of(wrong_type)
        assert text_of(await ask(session, "@say still here")) == "still here"


async def test_concurrent_calls_all_answer(agent: Running) -> None:
    async with mcp_session(agent) as session:
        results = await asyncio.gather(
            *(ask(session, f"@sleep 0.2 @say answer {n}") for n in range(5))
        )
    assert [text_of(result) for result in results] == [f"answer {n}" for n in range(5)]


async def test_langchain_mcp_adapters_load_and_invoke_the_tool(agent: Running) -> None:
    client = MultiServerMCPClient(
        {"agent": {"transport": "streamable_http", "url": f"{agent.url}/mcp"}}
    )
    [tool] = await client.get_tools()
    assert tool.name == "demo"
    assert tool.description == "The demo agent."  # never AGENTS.md
    output = await tool.ainvoke({"message": "@say from langchain"})
    assert "from langchain" in str(output)


# -- protocol versions and bad JSON-RPC --------------------------------------------------


async def test_every_supported_protocol_version_is_negotiated(
    agent: Running, http: httpx.AsyncClient
) -> None:
    assert {"2024-11-05", "2025-03-26", "2025-06-18", LATEST_PROTOCOL_VERSION} <= set(
        SUPPORTED_PROTOCOL_VERSIONS
    )
    for version in SUPPORTED_PROTOCOL_VERSIONS:
        response = await rpc(http, initialize(version), Accept="application/json")
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/json")
        assert payload(response)["result"]["protocolVersion"] == version
        listed = await rpc(
            http,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            **{"mcp-protocol-version": version},
        )
        assert payload(listed)["result"]["tools"][0]["name"] == "demo"
    future = await rpc(http, initialize("2099-01-01"))
    assert payload(future)["result"]["protocolVersion"] == LATEST_PROTOCOL_VERSION


async def test_bad_json_rpc_gets_protocol_errors_and_the_server_goes_on(
    agent: Running, http: httpx.AsyncClient
) -> None:
    malformed = await rpc(http, b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert malformed.status_code == 400
    assert malformed.json()["error"]["code"] == -32700
    assert malformed.json()["id"] is None
    not_rpc = await rpc(http, {"hello": "world"})
    assert not_rpc.status_code == 400
    assert not_rpc.json()["error"]["code"] == -32600
    batch = await rpc(http, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert batch.json()["error"]["code"] == -32600
    unknown = await rpc(http, {"jsonrpc": "2.0", "id": 7, "method": "resources/list"})
    assert payload(unknown) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32601, "message": unknown.json()["error"]["message"]},
    }
    assert "resources/list" in unknown.json()["error"]["message"]
    for params in ({"name": 5}, {"arguments": {"message": "x"}}):
        wrong = await rpc(
            http, {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": params}
        )
        assert payload(wrong)["error"]["code"] == -32602, params
    no_params = await rpc(http, {"jsonrpc": "2.0", "id": 9, "method": "initialize"})
    assert payload(no_params)["error"]["code"] == -32602
    unknown_tool = await rpc(
        http,
        {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "nope"}},
    )
    assert payload(unknown_tool)["error"]["code"] == -32602
    assert "nope" in payload(unknown_tool)["error"]["message"]
    notification = await rpc(http, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert notification.status_code == 202
    assert (await http.get("/mcp")).status_code == 405
    pong = await rpc(http, {"jsonrpc": "2.0", "id": 11, "method": "ping"})
    assert payload(pong) == {"jsonrpc": "2.0", "id": 11, "result": {}}
    async with mcp_session(agent) as session:
        assert text_of(await ask(session, "@say still serving")) == "still serving"


async def test_a_request_id_that_is_not_a_string_or_integer_is_an_invalid_request(
    http: httpx.AsyncClient,
) -> None:
    for bad_id in (1.5, None, True, {"n": 1}, [1]):
        refused = await rpc(http, {"jsonrpc": "2.0", "id": bad_id, "method": "ping"})
        assert refused.status_code == 400, bad_id
        error = refused.json()
        assert error["id"] is None
        assert error["error"]["code"] == -32600, bad_id
        assert "id must be a string or an integer" in error["error"]["message"]
    for good_id in ("p", 0, -3):
        pong = await rpc(http, {"jsonrpc": "2.0", "id": good_id, "method": "ping"})
        assert payload(pong) == {"jsonrpc": "2.0", "id": good_id, "result": {}}


async def test_malformed_params_keep_the_request_id_and_name_the_param(
    http: httpx.AsyncClient,
) -> None:
    cases: list[tuple[str | int, str, Any, str]] = [
        ("call-1", "tools/call", 5, "params: "),
        (2, "tools/call", [1, 2], "params: "),
        (3, "tools/call", {"name": 5}, "params.name: "),
        (4, "tools/call", {"name": "demo", "arguments": "hi"}, "params.arguments: "),
        ("init", "initialize", {"capabilities": {}}, "params.protocolVersion: "),
        (6, "tools/list", "all", "params: "),
    ]
    for request_id, method, params, named in cases:
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        reply = payload(await rpc(http, body))
        assert reply["id"] == request_id, (method, params, reply)
        assert reply["error"]["code"] == -32602, (method, params, reply)
        assert reply["error"]["message"].startswith("Invalid params: "), reply
        assert named in reply["error"]["message"], (named, reply)
    pong = await rpc(http, {"jsonrpc": "2.0", "id": 7, "method": "ping"})
    assert payload(pong) == {"jsonrpc": "2.0", "id": 7, "result": {}}


# -- auth ----------------------------------------------------------------------------------


async def test_deployment_key_is_required(agent: Running, http: httpx.AsyncClient) -> None:
    agent.server.access = AccessPolicy(api_key="k")
    refused = await rpc(http, initialize(LATEST_PROTOCOL_VERSION))
    assert refused.status_code == 401
    wrong = await rpc(http, initialize(LATEST_PROTOCOL_VERSION), **{"x-api-key": "nope"})
    assert wrong.status_code == 401
    async with mcp_session(agent, {"x-api-key": "k"}) as session:
        assert text_of(await ask(session, "@say with the key")) == "with the key"


@pytest.fixture(scope="module")
def issuer() -> Iterator[IdpBServer]:
    with IdpBServer() as server:
        yield server


async def test_runs_belong_to_the_signed_in_caller(agent: Running, issuer: IdpBServer) -> None:
    agent.server.access = AccessPolicy(
        authenticator=IdpBAuthenticator(issuer.secret_key, api_url=issuer.api_url)
    )
    alice = {"Authorization": f"Bearer {issuer.mint('alice')}"}
    bob = {"Authorization": f"Bearer {issuer.mint('bob')}"}
    thread_id = str(uuid.uuid4())
    async with mcp_session(agent, alice) as session:
        assert text_of(await ask(session, "@say hi alice", thread_id)) == "hi alice"
        assert text_of(await ask(session, "@say a one-off")) == "a one-off"
    thread = await agent.server.storage.threads.get(thread_id)
    assert thread is not None
    assert thread.metadata[OWNER] == "alice"
    [run] = await agent.server.storage.runs.list(thread_id, status=None, limit=10, offset=0)
    assert run.kwargs["user_id"] == "alice"
    async with mcp_session(agent, bob) as session:
        stolen = await ask(session, "@say hi bob", thread_id)
        assert stolen.isError
        assert "not found" in text_of(stolen)
    async with httpx.AsyncClient(base_url=agent.url) as http:
        anonymous = await rpc(http, initialize(LATEST_PROTOCOL_VERSION))
        assert anonymous.status_code == 401


# -- approval gates ------------------------------------------------------------------------


@pytest.mark.slow
async def test_an_approval_gate_answers_instead_of_hanging(tmp_path: Path) -> None:
    root = tmp_path / "gated"
    root.mkdir()
    (root / "agent.toml").write_text(
        '[agent]\nname = "gated"\nmodel = "openai:scripted"\n'
        'description = "Writes notes, after approval."\n[interrupt_on]\nwrite_file = true\n'
    )
    (root / "AGENTS.md").write_text("# Gated\n\nWrites notes,\nafter approval.\n\nMore.\n")
    script = call("write_file", file_path="/notes.md", content="hi") + "\n@say written"
    thread_id = str(uuid.uuid4())
    async with running_server(root, tmp_path / "data") as gated, mcp_session(gated) as session:
        [tool] = (await session.list_tools()).tools
        assert tool.description == "Writes notes, after approval."
        result = await session.call_tool("gated", {"message": script, "thread_id": thread_id})
        assert not result.isError
        assert "waiting for approval" in text_of(result)
        assert "write_file" in text_of(result)
        assert result.structuredContent is not None
        assert result.structuredContent["status"] == "interrupted"
        values: Any = await gated.client.runs.wait(
            thread_id, "gated", command={"resume": {"decisions": [{"type": "approve"}]}}
        )
        assert values["messages"][-1]["content"] == "written"


def test_an_answer_in_content_blocks_reads_as_written() -> None:
    """Anthropic cuts an answer with citations into several text blocks, beside blocks that
    are not text: the answer is their text joined as written, as A2A streams it."""
    content = [
        {"type": "thinking", "thinking": "hmm", "signature": "s"},
        {"type": "text", "text": "The report says ", "index": 1},
        {"type": "text", "text": "grass is green", "citations": [{"type": "char_location"}]},
        {"type": "text", "text": "."},
    ]
    ai = {"type": "ai", "content": content}
    assert last_answer({"messages": [ai]}) == "The report says grass is green."
    assert last_answer({"messages": [{**ai, "content": "plain"}]}) == "plain"
    assert last_answer({"messages": [{"type": "human", "content": "hi"}]}) is None


# -- agents calling agents -----------------------------------------------------------------


async def test_an_agent_uses_another_agent_through_its_mcp_json(
    agent: Running, tmp_path: Path
) -> None:
    agent.server.access = AccessPolicy(api_key="b-key")
    root = tmp_path / "boss"
    root.mkdir()
    (root / "agent.toml").write_text('[agent]\nname = "boss"\nmodel = "openai:scripted"\n')
    (root / "AGENTS.md").write_text("You delegate.\n")
    (root / ".env").write_text("DEMO_KEY=b-key\n")
    (root / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "demo": {
                        "url": f"{agent.url}/mcp",
                        "transport": "http",
                        "headers": {"x-api-key": "${DEMO_KEY}"},
                    }
                }
            }
        )
    )
    script = call("demo", message="@say pong") + "\n@say demo answered: {last_tool_result}"
    async with running_server(root, tmp_path / "boss-data") as boss:
        assert "demo" in boss.server.deployment.runtime.tool_names
        values: Any = await boss.client.runs.wait(None, "boss", input=user(script))
    assert values["messages"][-1]["content"] == "demo answered: pong"


async def test_arguments_no_store_holds_are_a_tool_error_naming_them(
    http: httpx.AsyncClient,
) -> None:
    """NUL (PostgreSQL holds none) is refused as the API refuses it; a lone surrogate does
    not even parse (the SDK answers -32700)."""
    params = {"name": "demo", "arguments": {"message": "a\x00"}}
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}
    reply = payload(await rpc(http, body))
    assert reply["id"] == 9, reply
    assert reply["result"]["isError"], reply
    text = reply["result"]["content"][0]["text"]
    assert text.startswith("invalid arguments — arguments: message: text must not"), text
    assert "NUL" in text
    params["arguments"] = {"message": "\ud800"}
    assert payload(await rpc(http, body))["error"]["code"] == -32700
    assert (await rpc(http, {"jsonrpc": "2.0", "id": 7, "method": "ping"})).status_code == 200
