"""A revision becomes a working deep agent: tools, subagents, memory, approval gates.

The model is the scripted OpenAI-compatible server reached through langchain-openai; MCP
servers are real FastMCP servers on loopback.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from agentctl.errors import McpLoadError, MissingEnvError, MissingPackageError, UserError
from agentctl.project import load_project
from agentctl.runtime import AgentRuntime, load_agent
from agentctl.runtime.namespaces import (
    escape_id,
    shared_namespace,
    subagent_seeds_namespace,
    unescape_id,
    user_namespace,
    user_subagent_namespace,
)
from agentctl.sandbox.base import SandboxKey
from agentctl.testing import ScriptedModelServer
from agentctl.testing.mcp_servers import calculator, serve
from tests.conftest import WriteFiles

# Real deep agents on the scripted model and MCP servers: about a second per test.
pytestmark = pytest.mark.slow

ODD_IDS = ["alice", "a|b", "first.last@example.com", "org/team/user", "with space", "ünï"]


@pytest.fixture(autouse=True)
def _model_env(model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in model_server.env.items():
        monkeypatch.setenv(name, value)


class Agent:
    """A loaded agent with its store, and a way to talk to it."""

    def __init__(self, runtime: AgentRuntime, store: InMemoryStore) -> None:
        self.runtime = runtime
        self.store = store

    async def ask(self, script: str, *, user: str | None = None, thread: str = "t1") -> Any:
        return await self.resume_or_ask(
            {"messages": [{"role": "user", "content": script}]}, user, thread
        )

    async def resume_or_ask(self, payload: Any, user: str | None, thread: str) -> Any:
        configurable: dict[str, str] = {"thread_id": thread}
        if user is not None:
            configurable["graph_auth_user_id"] = user
        return await self.runtime.graph.ainvoke(payload, {"configurable": configurable})


async def load(root: Path, store: InMemoryStore | None = None, rev: str = "r1") -> Agent:
    store = store or InMemoryStore()
    runtime = await load_agent(load_project(root), rev, store=store, checkpointer=InMemorySaver())
    return Agent(runtime, store)


def call(tool: str, **args: Any) -> str:
    return f"@call {tool} {json.dumps(args)}"


def answer(result: Any) -> str:
    last = result["messages"][-1]
    assert isinstance(last, AIMessage)
    return str(last.content)


def tool_results(result: Any) -> list[str]:
    """The text of every tool result of the conversation, in order."""
    return [m.text for m in result["messages"] if isinstance(m, ToolMessage)]


async def test_agent_uses_mcp_delegates_and_subagent_writes_its_memory(demo: Path) -> None:
    agent = await load(demo)
    assert {"add", "lookup", "task", "edit_file"} <= agent.runtime.tool_names
    subtask = "\n".join(
        [
            call("lookup", topic="memory"),
            call("write_file", file_path="/memories/subagents/researcher/notes.md", content="42"),
            "@say researched: {last_tool_result}",
        ]
    )
    script = "\n".join(
        [
            call("add", a=2, b=3),
            call("task", subagent_type="researcher", description=subtask),
            "@say done: {last_tool_result}",
        ]
    )
    result = await agent.ask(script, user="alice")
    add_result, task_result = tool_results(result)
    assert add_result == "5"
    assert task_result.startswith(
        "researched: Updated file /memories/subagents/researcher/notes.md"
    )
    note = agent.store.get(user_subagent_namespace("demo", "alice", "researcher"), "/notes.md")
    assert note is not None
    assert note.value["content"] == "42"


async def test_subagent_uses_its_own_mcp_server_and_inherits_the_main_tools(demo: Path) -> None:
    agent = await load(demo)
    subtask = "\n".join(
        [call("lookup", topic="x"), call("add", a=1, b=1), "@say {last_tool_result}"]
    )
    result = await agent.ask(
        call("task", subagent_type="researcher", description=subtask) + "\n@say ok"
    )
    assert tool_results(result) == ["2"]
    writer_tries = call("lookup", topic="x") + "\n@say {last_tool_result}"
    result = await agent.ask(
        call("task", subagent_type="writer", description=writer_tries) + "\n@say ok",
        thread="t2",
    )
    assert "lookup is not a valid tool" in tool_results(result)[0]


async def test_instructions_skills_and_user_memory_are_in_the_prompt(demo: Path) -> None:
    agent = await load(demo)
    prompt = answer(await agent.ask("@say {system}", user="alice"))
    assert "You are the demo agent." in prompt
    assert "review things well" in prompt
    assert "/memories/skills/review/SKILL.md" in prompt
    assert "# About the user" in prompt
    body = answer(
        await agent.ask(
            call("read_file", file_path="/memories/skills/review/SKILL.md")
            + "\n@say {last_tool_result}",
            thread="t2",
        )
    )
    assert "Steps." in body


async def test_user_memory_is_per_user_and_preloaded(demo: Path) -> None:
    agent = await load(demo)
    edit = call(
        "edit_file",
        file_path="/memories/user/AGENTS.md",
        old_string="# About the user",
        new_string="# About the user\n- prefers green tea",
    )
    await agent.ask(edit + "\n@say noted", user="alice", thread="a1")
    assert "green tea" in answer(await agent.ask("@say {system}", user="alice", thread="a2"))
    bob = "bob"
    assert "green tea" not in answer(await agent.ask("@say {system}", user=bob, thread="b1"))
    probes = [
        call("read_file", file_path="/memories/user/AGENTS.md"),
        call("ls", path="/memories/user/"),
        call("glob", pattern="**/*", path="/memories/"),
        call("grep", pattern="green tea", path="/memories/"),
        call("grep", pattern="green tea"),
    ]
    result = await agent.ask("\n".join([*probes, "@say done"]), user=bob, thread="b2")
    for seen in tool_results(result):
        assert "green tea" not in seen
        assert "alice" not in seen


@pytest.mark.parametrize("user", ODD_IDS)
async def test_odd_user_ids_get_their_own_namespace(demo: Path, user: str) -> None:
    agent = await load(demo)
    write = call("write_file", file_path="/memories/user/fact.md", content=f"fact of {user}")
    await agent.ask(write + "\n@say ok", user=user)
    namespace = user_namespace("demo", user)
    assert "." not in "".join(namespace)
    assert agent.store.get(namespace, "/fact.md") is not None
    assert unescape_id(escape_id(user)) == user
    others = [u for u in ODD_IDS if u != user]
    for other in others[:2]:
        grep = call("grep", pattern="fact of", path="/memories/")
        result = await agent.ask(grep + "\n@say done", user=other, thread=f"probe-{other}")
        assert "fact of" not in tool_results(result)[0]


async def test_new_revision_never_overwrites_user_memory(demo: Path) -> None:
    first = await load(demo)
    edit = call(
        "edit_file",
        file_path="/memories/user/AGENTS.md",
        old_string="# About the user",
        new_string="mine",
    )
    await first.ask(edit + "\n@say ok", user="alice")
    (demo / "user/AGENTS.md").write_text("# New template\n")
    (demo / "AGENTS.md").write_text("You are the demo agent, revised.\n")
    second = await load(demo, store=first.store, rev="r2")
    prompt = answer(await second.ask("@say {system}", user="alice", thread="new"))
    assert "mine" in prompt
    assert "New template" not in prompt
    assert "revised" in prompt
    shared = second.store.get(shared_namespace("demo"), "/AGENTS.md")
    assert shared is not None
    assert "revised" in shared.value["content"]
    assert "New template" in answer(await second.ask("@say {system}", user="carol", thread="c"))


async def test_new_revision_reseeds_shared_skills(demo: Path) -> None:
    first = await load(demo)
    assert first.store.get(shared_namespace("demo"), "/skills/review/SKILL.md")
    (demo / "skills/review/SKILL.md").unlink()
    (demo / "skills/review").rmdir()
    second = await load(demo, store=first.store, rev="r2")
    assert second.store.get(shared_namespace("demo"), "/skills/review/SKILL.md") is None


async def test_without_a_user_user_memory_is_skipped(demo: Path) -> None:
    agent = await load(demo)
    script = [
        call("ls", path="/memories/user/"),
        call("read_file", file_path="/memories/user/AGENTS.md"),
        call("write_file", file_path="/memories/user/x.md", content="anon"),
        "@say {system}",
    ]
    result = await agent.ask("\n".join(script))
    listing, read, write = tool_results(result)
    assert listing == "No files found"
    assert "no user is signed in" in read
    assert "no user is signed in" in write
    assert "# About the user" not in answer(result)
    assert agent.store.search(("memories", "demo", "user")) == []


async def test_shared_memory_is_read_only(demo: Path) -> None:
    agent = await load(demo)
    script = [
        call("write_file", file_path="/memories/AGENTS.md", content="evil"),
        call("edit_file", file_path="/memories/AGENTS.md", old_string="demo", new_string="evil"),
        call("write_file", file_path="/memories/skills/review/SKILL.md", content="evil"),
        call("write_file", file_path="/memories/skills/new/SKILL.md", content="evil"),
        call("write_file", file_path="/memories/subagents/writer/x.md", content="evil"),
        "@say done",
    ]
    result = await agent.ask("\n".join(script), user="alice")
    for seen in tool_results(result):
        assert seen.startswith("Error: permission denied for write on /memories/")
    shared = agent.store.get(shared_namespace("demo"), "/AGENTS.md")
    assert shared is not None
    assert shared.value["content"] == "You are the demo agent.\n"


async def test_subagent_sees_only_its_own_memory(demo: Path) -> None:
    """A subagent's probes of a sibling's, the shared or the user's memory find nothing."""
    agent = await load(demo)
    draft = call("write_file", file_path="/memories/subagents/writer/draft.md", content="secret")
    await agent.ask(call("task", subagent_type="writer", description=draft + "\n@say ok"), user="a")
    probes = [
        call("read_file", file_path="/memories/subagents/writer/draft.md"),
        call("grep", pattern="secret"),
        call("glob", pattern="**/*.md", path="/"),
        call("ls", path="/memories/"),
        call("read_file", file_path="/memories/AGENTS.md"),
        call("read_file", file_path="/memories/user/AGENTS.md"),
        call("write_file", file_path="/memories/subagents/writer/x.md", content="x"),
    ]
    for index, probe in enumerate(probes):
        task = call(
            "task", subagent_type="researcher", description=f"{probe}\n@say {{last_tool_result}}"
        )
        seen = answer(
            await agent.ask(f"{task}\n@say {{last_tool_result}}", user="a", thread=str(index))
        )
        for hidden in ("secret", "You are the demo agent", "About the user"):
            assert hidden not in seen
        if probe.startswith(("@call grep", "@call glob", "@call ls")):
            assert "writer" not in seen
    assert "permission denied for write" in seen
    main_read = (
        call("read_file", file_path="/memories/subagents/writer/draft.md")
        + "\n@say {last_tool_result}"
    )
    assert "secret" in answer(await agent.ask(main_read, user="a", thread="m"))
    assert "secret" not in answer(await agent.ask(main_read, user="b", thread="m2"))


async def test_approval_gate_pauses_and_resumes(write_files: WriteFiles) -> None:
    root = write_files(
        {
            "agent.toml": (
                '[agent]\nname = "gated"\n[interrupt_on]\n'
                'write_file = { allowed_decisions = ["approve", "reject"] }\n'
            ),
            "AGENTS.md": "Gated.\n",
        }
    )
    agent = await load(root)
    script = (
        call("write_file", file_path="/notes.md", content="hello") + "\n@say {last_tool_result}"
    )
    paused = await agent.ask(script, thread="g1")
    [interrupt] = paused["__interrupt__"]
    assert interrupt.value["action_requests"][0]["name"] == "write_file"
    assert interrupt.value["review_configs"][0]["allowed_decisions"] == ["approve", "reject"]
    done = await agent.resume_or_ask(
        Command(resume={"decisions": [{"type": "approve"}]}), None, "g1"
    )
    assert answer(done) == "Updated file /notes.md"
    paused = await agent.ask(script, thread="g2")
    rejected = await agent.resume_or_ask(
        Command(resume={"decisions": [{"type": "reject", "message": "not now"}]}), None, "g2"
    )
    assert "not now" in answer(rejected)


async def test_gate_on_an_mcp_tool(demo: Path) -> None:
    text = (demo / "agent.toml").read_text() + "\n[interrupt_on]\nadd = true\n"
    (demo / "agent.toml").write_text(text)
    agent = await load(demo)
    paused = await agent.ask(call("add", a=1, b=2) + "\n@say {last_tool_result}")
    assert paused["__interrupt__"][0].value["action_requests"][0]["name"] == "add"
    done = await agent.resume_or_ask(
        Command(resume={"decisions": [{"type": "approve"}]}), None, "t1"
    )
    assert "3" in answer(done)


async def test_gate_on_an_unknown_tool_fails_at_load_naming_the_closest(demo: Path) -> None:
    # With MCP servers, the gates are checked once their tools are listed, when it loads.
    text = (demo / "agent.toml").read_text() + "\n[interrupt_on]\naddd = true\n"
    (demo / "agent.toml").write_text(text)
    with pytest.raises(
        UserError,
        match=r"agent.toml: \[interrupt_on\]: addd is not a tool of this agent — "
        r"did you mean add\? Or gate one of its tools instead: add, delete, ",
    ):
        await load(demo)


async def test_unreachable_mcp_server_fails_at_load(write_files: WriteFiles) -> None:
    with serve(calculator().streamable_http_app()) as port:
        pass  # the port is free again: nothing listens there
    root = write_files(
        {
            "agent.toml": '[agent]\nname = "m"\n',
            "AGENTS.md": "M\n",
            "mcp.json": json.dumps(
                {"mcpServers": {"gone": {"url": f"http://127.0.0.1:{port}/mcp"}}}
            ),
        }
    )
    with pytest.raises(McpLoadError) as caught:
        await load(root)
    message = str(caught.value)
    assert message.startswith(
        f'MCP server "gone" (http://127.0.0.1:{port}/mcp) could not be listed: '
    )
    assert "ConnectError" in message


async def test_a_server_naming_an_agent_is_reached_at_its_url_off_the_platform(
    write_files: WriteFiles,
) -> None:
    with serve(calculator().streamable_http_app()) as port:
        servers = {
            "calc": {"agent": "calculator", "url": f"http://127.0.0.1:{port}/mcp"},
            "peer": {"agent": "researcher"},
        }
        files = {
            "agent.toml": '[agent]\nname = "m"\n',
            "AGENTS.md": "M\n",
            "mcp.json": json.dumps({"mcpServers": servers}),
        }
        with pytest.raises(McpLoadError) as caught:
            await load(write_files(files))
        assert str(caught.value) == (
            'MCP server "peer" names agent "researcher", which is called in-process only on '
            "the platform that serves both (agentctl serve) — to reach it from here, add its "
            '"url" (and "headers") to mcp.json'
        )
        del servers["peer"]  # with its url only, it is an ordinary MCP server here
        files["mcp.json"] = json.dumps({"mcpServers": servers})
        agent = await load(write_files(files))
    assert "add" in agent.runtime.tool_names


async def test_missing_provider_package_fails_at_load(
    write_files: WriteFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "k")
    root = write_files(
        {
            "agent.toml": '[agent]\nname = "p"\nmodel = "mistralai:mistral-large"\n',
            "AGENTS.md": "P\n",
        }
    )
    with pytest.raises(
        MissingPackageError, match=re.escape("run: pip install 'langchain-mistralai>=1.1,<2'")
    ):
        await load(root)


async def test_missing_api_key_fails_at_load(
    write_files: WriteFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    root = write_files({"agent.toml": '[agent]\nname = "p"\n', "AGENTS.md": "P\n"})
    with pytest.raises(MissingEnvError, match="OPENAI_API_KEY"):
        await load(root)


async def test_a_partner_sandbox_without_its_package_fails_at_load(
    write_files: WriteFiles,
) -> None:
    root = write_files(
        {
            "agent.toml": '[agent]\nname = "s"\n[sandbox]\nprovider = "sandbox_b"\n',
            "AGENTS.md": "S\n",
        }
    )
    with pytest.raises(UserError) as caught:
        await load(root)
    assert str(caught.value) == (
        '[sandbox] provider "sandbox_b" needs the package langchain-modal — '
        "install it: pip install 'langchain-modal>=0.0.7,<0.1'"
    )


async def test_without_user_folder_nothing_is_written_under_user(
    demo: Path,
) -> None:
    (demo / "user/AGENTS.md").unlink()
    (demo / "user").rmdir()
    agent = await load(demo)
    write = call("write_file", file_path="/memories/user/AGENTS.md", content="alice private")
    result = await agent.ask(write + "\n@say {last_tool_result}", user="alice")
    assert answer(result).startswith("Error: permission denied for write on /memories/user/")
    probe = call("grep", pattern="alice private") + "\n@say {last_tool_result}"
    assert "alice private" not in answer(await agent.ask(probe, user="bob", thread="b"))
    assert [item.key for item in agent.store.search(shared_namespace("demo"))] == [
        "/AGENTS.md",
        "/skills/review/SKILL.md",
    ]


def test_no_namespace_is_a_string_prefix_of_another() -> None:
    """PostgreSQL searches `prefix%`, SQLite `prefix.*`: neither may reach another user."""
    users = ["ab", "abc", "a_b", "aXb", "a.b", "a%b", "a~2Eb", "a b", "a*", "a[b]"]
    spaces = [".".join(user_namespace("demo", u)) for u in users]
    subagents = ["res", "research", "r_s", "rxs", "files", "subagent"]
    spaces += [".".join(subagent_seeds_namespace("demo", s)) for s in subagents]
    spaces += [
        ".".join(user_subagent_namespace(assistant, u, s))
        for assistant in ["demo", "files", "subagent"]
        for u in users
        for s in subagents
    ]
    spaces += [".".join(user_namespace(a, u)) for a in ["files", "subagent"] for u in users]
    spaces += [".".join(shared_namespace(a)) for a in ["demo", "demo2", "de_mo", "deXmo"]]
    assert len(set(spaces)) == len(spaces)
    for one in spaces:
        for other in spaces:
            assert one == other or not other.startswith(one)
        assert not set(one) & set("%_*?[]")


async def test_user_memory_isolation_on_sqlite_store(demo: Path, tmp_path: Path) -> None:
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    async with AsyncSqliteStore.from_conn_string(str(tmp_path / "store.db")) as store:
        await store.setup()
        agent = Agent(
            await load_agent(load_project(demo), "r1", store=store, checkpointer=InMemorySaver()),
            store,
        )
        write = call("write_file", file_path="/memories/user/diary.md", content="private")
        await agent.ask(write + "\n@say ok", user="abc", thread="abc")
        for user in ("ab", "a", "abc~"):
            probes = [
                call("ls", path="/memories/user/"),
                call("glob", pattern="**/*", path="/memories/"),
                call("grep", pattern="private"),
            ]
            result = await agent.ask("\n".join([*probes, "@say done"]), user=user, thread=user)
            for seen in tool_results(result):
                assert "diary" not in seen
                assert "private" not in seen


async def test_keys_and_mcp_variables_may_come_from_dotenv(
    demo: Path, monkeypatch: pytest.MonkeyPatch, calc_port: int
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    (demo / ".env").write_text("OPENAI_API_KEY=sk-local-test\nCALC_TOKEN=from-dotenv-token\n")
    servers = {
        "calc": {
            "url": f"http://127.0.0.1:{calc_port}/mcp",
            "headers": {"Authorization": "Bearer ${CALC_TOKEN}"},
        }
    }
    (demo / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    agent = await load(demo)
    assert tool_results(await agent.ask(call("add", a=1, b=2) + "\n@say ok")) == ["3"]


async def test_mcp_errors_never_show_expanded_secrets(
    write_files: WriteFiles, library_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIB_KEY", "s3cret value")
    url = f"http://127.0.0.1:{library_port}/nope?key=${{LIB_KEY}}"
    root = write_files(
        {
            "agent.toml": '[agent]\nname = "m"\n',
            "AGENTS.md": "M\n",
            "mcp.json": json.dumps({"mcpServers": {"lib": {"url": url, "transport": "sse"}}}),
        }
    )
    with pytest.raises(McpLoadError) as caught:
        await load(root)
    message = str(caught.value)
    assert "${LIB_KEY}" in message
    for leaked in ("s3cret", "s3cret%20value", "s3cret+value"):
        assert leaked not in message


def test_sandbox_names_say_whose_sandbox_it_is() -> None:
    """A sandbox's name holds the agent's incarnation (when it has one), and reads back."""
    assert SandboxKey("coder", None, "9f3c").name == "a.coder~~9f3c"
    assert SandboxKey("coder", "t1", "9f3c").name == "t.coder~~9f3c.t1"
    assert SandboxKey("coder", "t1").name == "t.coder.t1"  # `agentctl dev`, older agents
    keys = [
        SandboxKey("coder"),
        SandboxKey("my.agent", "thread 1"),
        SandboxKey("é~~x", "th.1", "ab-1"),
        SandboxKey("coder", None, "9f3c"),
    ]
    for key in keys:
        assert SandboxKey.of_name(key.name) == key
    for name in ("a.coder~~", "a.~~9f3c", "a.coder~~9f.3c", "t.coder~~9f3c", "x.coder"):
        assert SandboxKey.of_name(name) is None
