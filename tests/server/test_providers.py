"""The agent scenarios through each provider's own langchain package and wire: the scripted
model speaks OpenAI (langchain-openai), Anthropic Messages with content blocks
(langchain-anthropic) and Ollama's chat API (langchain-ollama).

One signed-in server of the demo per provider runs a tool call, a subagent, user memory, a
`messages-tuple` stream, and answers over MCP and A2A; a gated agent pauses and resumes, and
streams a run over the thread stream protocol."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState
from langgraph_sdk.client import LangGraphClient
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from agentctl.testing import PROVIDERS, ScriptedModelServer
from agentctl.testing.demo import write_demo
from agentctl.testing.identity import IdpBServer
from tests.server.conftest import ALICE, BOB, Running, call, running_server, sdk, user, with_auth

pytestmark = pytest.mark.parametrize("provider", PROVIDERS)

SUM = call("add", a=2, b=3)
RESEARCH = call("lookup", topic="tea") + "\n@say researched: {last_tool_result}"
REMEMBER = call(
    "edit_file",
    file_path="/memories/user/AGENTS.md",
    old_string="# About the user",
    new_string="# About the user\n- drinks green tea",
)


@pytest.fixture(autouse=True)
def _provider_env(
    provider: str, model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in model_server.env_for(provider).items():
        monkeypatch.setenv(name, value)


def text_of(content: Any) -> str:
    """A message's text, whether its content is a string or a list of content blocks."""
    if isinstance(content, str):
        return content
    return "".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text")


def last_text(values: Any) -> str:
    return text_of(values["messages"][-1]["content"])


def squash(text: str) -> str:
    """`text` with its whitespace runs made single spaces: langchain-ollama sends a tool
    result given as content blocks (as MCP tools give it) as its parts each after a newline,
    so `{last_tool_result}` has newlines on that wire."""
    return " ".join(text.split())


@pytest.fixture
async def signed_in(
    provider: str, tmp_path: Path, calc_port: int, library_port: int, idp_b: IdpBServer
) -> AsyncIterator[tuple[Running, IdpBServer]]:
    demo = write_demo(
        tmp_path / "demo",
        f"http://127.0.0.1:{calc_port}/mcp",
        f"http://127.0.0.1:{library_port}/sse",
        model=f"{provider}:scripted",
    )
    project = with_auth(demo, tmp_path / "signed-in", {"provider": "idp_b"}, idp_b.env)
    async with running_server(project, tmp_path / "data") as running:
        yield running, idp_b


async def stream_run(client: LangGraphClient, script: str) -> tuple[list[Any], Any]:
    """Run `script` on a new thread streaming `messages-tuple` and `values`: the message
    chunks and the last values."""
    chunks: list[Any] = []
    values: Any = None
    async for part in client.runs.stream(
        str(uuid.uuid4()),
        "demo",
        input=user(script),
        stream_mode=["messages-tuple", "values"],
        if_not_exists="create",
    ):
        if part.event == "messages":
            chunks.append(part.data)
        elif part.event == "values":
            values = part.data
        assert part.event != "error", part.data
    return chunks, values


async def test_tools_subagent_memory_and_messages_tuple(
    provider: str, signed_in: tuple[Running, IdpBServer]
) -> None:
    running, idp = signed_in
    alice = sdk(running.url, token=idp.mint(ALICE))
    bob = sdk(running.url, token=idp.mint(BOB))
    try:
        script = "\n".join(
            [
                REMEMBER,
                call("task", subagent_type="researcher", description=RESEARCH),
                SUM,
                "@say sum {last_tool_result}",
            ]
        )
        chunks, values = await stream_run(alice, script)
        results = [squash(text_of(m["content"])) for m in values["messages"] if m["type"] == "tool"]
        assert results[0].startswith("Successfully replaced")
        assert results[1:] == ["researched: the library says tea is well documented", "5"]
        assert squash(last_text(values)) == "sum 5"
        # messages-tuple: AI chunks with their metadata, the answer streamed in pieces.
        ai = [(chunk, meta) for chunk, meta in chunks if chunk["type"] == "AIMessageChunk"]
        assert all(isinstance(meta, dict) and meta.get("langgraph_node") for _, meta in ai)
        if provider == "anthropic":  # content blocks, not strings, all the way to the client
            assert all(isinstance(chunk["content"], list) for chunk, _ in ai)
            assert isinstance(values["messages"][-1]["content"], list)
        streamed = "".join(text_of(chunk["content"]) for chunk, _ in ai)
        assert "sum 5" in squash(streamed)
        names = {c["name"] for chunk, _ in ai for c in chunk.get("tool_call_chunks") or ()}
        assert {"add", "task", "edit_file"} <= names
        # User memory: alice's next conversation knows it, bob's does not.
        _, later = await stream_run(alice, "@say {system}")
        assert "drinks green tea" in last_text(later)
        _, other = await stream_run(bob, "@say {system}")
        assert "# About the user" in last_text(other)
        assert "green tea" not in last_text(other)
        # MCP and A2A answers, for the signed-in user.
        headers = {"Authorization": f"Bearer {idp.mint(ALICE)}"}
        mcp = await mcp_answer(running, headers, SUM + "\n@say mcp {last_tool_result}")
        assert squash(mcp) == "mcp 5"
        a2a = await a2a_answer(running, headers, SUM + "\n@say a2a {last_tool_result}")
        assert squash(a2a) == "a2a 5"
        streamed_a2a = await a2a_answer(running, headers, "@say one two three", streaming=True)
        assert streamed_a2a == "one two three"
    finally:
        await alice.aclose()
        await bob.aclose()


async def mcp_answer(running: Running, headers: dict[str, str], script: str) -> str:
    async with (
        httpx.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{running.url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("demo", {"message": script})
    assert not result.isError, result
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


async def a2a_answer(
    running: Running, headers: dict[str, str], script: str, *, streaming: bool = False
) -> str:
    request = SendMessageRequest(
        message=Message(role=Role.ROLE_USER, parts=[Part(text=script)], message_id="m1")
    )
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        card = await A2ACardResolver(http, running.url).get_agent_card(
            relative_card_path="/.well-known/agent-card.json?assistant_id=demo"
        )
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card)
        async with client:
            events = [event async for event in client.send_message(request)]
    if streaming:
        last = events[-1].status_update
        assert TaskState.Name(last.status.state) == "TASK_STATE_COMPLETED"
        chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
        assert chunks[-1].last_chunk
        return get_artifact_text(chunks[-1].artifact, delimiter="")
    [response] = events
    assert TaskState.Name(response.task.status.state) == "TASK_STATE_COMPLETED"
    return get_artifact_text(response.task.artifacts[-1], delimiter="")


@pytest.mark.slow
async def test_approval_gate_pauses_and_resumes(provider: str, tmp_path: Path) -> None:
    root = tmp_path / "gated"
    root.mkdir()
    (root / "agent.toml").write_text(
        f'[agent]\nname = "gated"\nmodel = "{provider}:scripted"\n'
        "[interrupt_on]\nwrite_file = true\n"
    )
    (root / "AGENTS.md").write_text("Gated.\n")
    script = call("write_file", file_path="/notes.md", content="hi") + "\n@say {last_tool_result}"
    async with running_server(root, tmp_path / "data") as running:
        client = running.client
        thread = await client.threads.create()
        paused: Any = await client.runs.wait(thread["thread_id"], "gated", input=user(script))
        [interrupt] = paused["__interrupt__"]
        assert interrupt["value"]["action_requests"][0]["name"] == "write_file"
        done = await client.runs.wait(
            thread["thread_id"],
            "gated",
            command={"resume": {"decisions": [{"type": "approve"}]}},
        )
        assert last_text(done) == "Updated file /notes.md"
        other = await client.threads.create()
        await client.runs.wait(other["thread_id"], "gated", input=user(script))
        rejected = await client.runs.wait(
            other["thread_id"],
            "gated",
            command={"resume": {"decisions": [{"type": "reject", "message": "not now"}]}},
        )
        assert "not now" in last_text(rejected)

        # The thread stream protocol of the newest SDKs shows the messages as content blocks.
        # One projection per thread stream: two subscribing at once can race in the SDK (a
        # rotation may close the stream the other still awaits, which then never opens).
        async def projected(name: str) -> list[Any]:
            async with client.threads.stream(assistant_id="gated") as stream:
                await stream.run.start(input=user(call("ls", path="/") + "\n@say listed"))
                async with asyncio.timeout(20):
                    return [item async for item in getattr(stream, name)]

        texts = [await message.text for message in await projected("messages")]
        [(name, args)] = [(c.name, c.input) for c in await projected("tool_calls")]
        assert texts == ["", "listed"]
        assert (name, args) == ("ls", {"path": "/"})
