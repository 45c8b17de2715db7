"""The platform sandbox through the agent: the scripted model calls `execute` and the file
tools, the official SDK drives the runs."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from agentctl.project import load_project
from agentctl.runtime import load_agent
from agentctl.settings import Settings
from agentctl.testing import ScriptedModelServer
from tests.conftest import sandbox_project
from tests.server.conftest import (
    PLATFORM_KEY,
    PLATFORM_OPERATOR,
    call,
    platform_at,
    running_server,
    upload,
    user,
)


async def answer(client: LangGraphClient, thread: str | None, script: str) -> str:
    """Run `script` on `thread` and return the agent's last message."""
    result: Any = await client.runs.wait(thread, "coder", input=user(script))
    return str(result["messages"][-1]["content"])


def run_and_say(command: str) -> str:
    return f"{call('execute', command=command)}\n@say {{last_tool_result}}"


async def test_skill_script_runs_in_the_sandbox(tmp_path: Path, sandbox_dir: Path) -> None:
    project = sandbox_project(tmp_path / "coder")
    async with running_server(project, tmp_path / "data") as agent:
        thread = await agent.client.threads.create()
        said = await answer(
            agent.client,
            thread["thread_id"],
            run_and_say("python3 /memories/skills/greet/greet.py Ada; id -un; pwd"),
        )
    assert "hello from the greet skill, Ada" in said
    assert "sandbox\n/workspace" in said


async def test_thread_scope_keeps_files_per_thread(tmp_path: Path, sandbox_dir: Path) -> None:
    project = sandbox_project(tmp_path / "coder")
    async with running_server(project, tmp_path / "data") as agent:
        first = (await agent.client.threads.create())["thread_id"]
        second = (await agent.client.threads.create())["thread_id"]
        write = call("write_file", file_path="/workspace/notes.txt", content="kept across turns")
        await answer(agent.client, first, f"{write}\n@say written")
        again = await answer(agent.client, first, run_and_say("cat notes.txt"))
        elsewhere = await answer(agent.client, second, run_and_say("ls -A /workspace; echo end"))
    assert "kept across turns" in again
    assert "notes.txt" not in elsewhere
    assert "end" in elsewhere


async def test_assistant_scope_is_shared_and_survives_a_restart(
    tmp_path: Path, sandbox_dir: Path
) -> None:
    project = sandbox_project(tmp_path / "coder", scope="assistant")
    async with running_server(project, tmp_path / "data") as agent:
        first = (await agent.client.threads.create())["thread_id"]
        await answer(agent.client, first, run_and_say("echo shared > shared.txt"))
        second = (await agent.client.threads.create())["thread_id"]
        seen = await answer(agent.client, second, run_and_say("cat /workspace/shared.txt"))
    assert "shared" in seen
    async with running_server(project, tmp_path / "data") as agent:
        third = (await agent.client.threads.create())["thread_id"]
        after = await answer(agent.client, third, run_and_say("cat /workspace/shared.txt"))
    assert "shared" in after


async def test_thread_sandboxes_are_recreated_after_a_restart(
    tmp_path: Path, sandbox_dir: Path
) -> None:
    project = sandbox_project(tmp_path / "coder")
    async with running_server(project, tmp_path / "data") as agent:
        thread = (await agent.client.threads.create())["thread_id"]
        await answer(agent.client, thread, run_and_say("echo before > mark.txt"))
    async with running_server(project, tmp_path / "data") as agent:
        said = await answer(agent.client, thread, run_and_say("ls -A; echo listed"))
    assert "mark.txt" not in said
    assert "listed" in said


async def test_a_runaway_command_ends_with_a_clear_tool_result(
    tmp_path: Path, sandbox_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTCTL_SANDBOX_TIMEOUT_SECONDS", "2")
    project = sandbox_project(tmp_path / "coder")
    async with running_server(project, tmp_path / "data") as agent:
        said = await answer(agent.client, None, run_and_say("while true; do :; done"))
        health = await answer(agent.client, None, run_and_say("echo still fine"))
    assert "the command was stopped: it ran longer than the time limit of 2 s" in said
    assert "still fine" in health


async def test_without_bubblewrap_the_agent_does_not_load(
    tmp_path: Path, sandbox_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentctl.errors import AgentctlError

    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    project = sandbox_project(tmp_path / "coder")
    with pytest.raises(AgentctlError) as caught:
        async with running_server(project, tmp_path / "data"):
            pass
    assert "apt-get install bubblewrap" in str(caught.value)


async def test_the_operator_lists_the_sandboxes(tmp_path: Path, sandbox_dir: Path) -> None:
    project = sandbox_project(tmp_path / "coder")
    async with running_server(project, tmp_path / "data") as agent:
        thread = (await agent.client.threads.create())["thread_id"]
        await answer(agent.client, thread, run_and_say("echo here"))
        async with httpx.AsyncClient(base_url=agent.url) as http:
            listed = (await http.get("/platform/sandboxes")).json()
    assert listed["settings"]["provider"] == "platform_sandbox"
    assert listed["settings"]["scope"] == "thread"
    [box] = listed["sandboxes"]
    assert box["scope"] == "thread"
    assert box["name"].startswith("t.")
    assert box["name"].endswith(thread)
    assert box["image"] == listed["settings"]["image"]
    assert box["created_at"] <= box["last_used_at"]


async def test_the_operator_sees_only_this_server_s_sandboxes(
    tmp_path: Path, sandbox_dir: Path
) -> None:
    """A sandbox service shared by two deployments: each operator's list holds only the
    sandboxes of its own agent."""
    other = sandbox_project(tmp_path / "other", name="other")
    async with (
        running_server(sandbox_project(tmp_path / "coder"), tmp_path / "data") as coder,
        running_server(other, tmp_path / "other-data") as agent,
        httpx.AsyncClient() as http,
    ):
        thread = (await coder.client.threads.create())["thread_id"]
        await answer(coder.client, thread, run_and_say("echo here"))
        [mine] = (await http.get(f"{coder.url}/platform/sandboxes")).json()["sandboxes"]
        others = (await http.get(f"{agent.url}/platform/sandboxes")).json()["sandboxes"]
    assert mine["name"].endswith(thread)
    assert others == []


async def test_a_command_sees_no_secret_of_the_server_or_of_another_agent(
    tmp_path: Path, sandbox_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`execute` starts from an empty environment: not the server's (its deployment key,
    secrets key, database password), not its own agent's variables, not another agent's."""
    server_secrets = {
        "PLATFORM_API_KEY": "pk-server-deployment-key-31337",
        "AGENTCTL_SECRETS_KEY": "server-secrets-key-31337",
        "DATABASE_URL": "postgresql://agentctl:db-password-31337@db/agentctl",
    }
    for name, value in server_secrets.items():
        monkeypatch.setenv(name, value)
    coder = sandbox_project(tmp_path / "coder")
    with (coder / ".env").open("a") as env:
        env.write("CODER_TOKEN=coder-token-31337\n")
    other = sandbox_project(tmp_path / "other", name="other")
    async with running_server(coder, tmp_path / "data") as agent:
        other_env = {**load_project(other).env, "OTHER_TOKEN": "other-token-31337"}
        neighbour = await load_agent(
            load_project(other, environ=other_env),
            "other-1",
            store=agent.server.storage.store,
            checkpointer=agent.server.storage.checkpointer,
            env=other_env,
            sandboxes=agent.server.sandboxes,
        )
        config = {"configurable": {"thread_id": str(uuid.uuid4())}}
        ran = await neighbour.graph.ainvoke({"messages": [("user", run_and_say("env"))]}, config)
        assert "HOME=/workspace" in str(ran["messages"][-1].content)  # its sandbox ran
        said = await answer(
            agent.client, None, run_and_say("env; cat /proc/*/environ | tr '\\0' '\\n'")
        )
    assert "HOME=/workspace" in said
    for secret in [*server_secrets.values(), "coder-token-31337", "other-token-31337"]:
        assert secret not in said
    assert "platform-key" not in said


async def test_deleting_an_agent_of_the_platform_removes_its_sandboxes(
    tmp_path: Path, sandbox_dir: Path, model_server: ScriptedModelServer
) -> None:
    """`agentctl serve` on SQLite runs its agents' sandboxes in process (here all in one
    AGENTCTL_SANDBOX_DIR): deleting an agent removes its sandboxes and no other agent's, and
    the agent deployed again under its name starts afresh."""
    data = str(tmp_path / "platform")
    settings = Settings.from_env({"PLATFORM_API_KEY": PLATFORM_KEY, "AGENTCTL_DATA_DIR": data})
    async with platform_at(settings) as (_, http):

        async def deployed(name: str) -> None:
            project = sandbox_project(tmp_path / name, scope="assistant", name=name)
            (project / ".env").unlink()  # the deploy sends the variables
            answer = await upload(http, project, model_server, PLATFORM_API_KEY=PLATFORM_KEY)
            assert answer.status_code == 201, answer.text

        async def output(name: str, command: str) -> str:
            body = {"assistant_id": name, "input": user(run_and_say(command))}
            answer = await http.post(
                f"/agents/{name}/runs/wait", json=body, headers=PLATFORM_OPERATOR
            )
            return str(answer.json()["messages"][-1]["content"])

        for name in ("coder", "other"):
            await deployed(name)
            await output(name, f"echo written-by-{name} > notes.txt")
        made = sorted(os.listdir(sandbox_dir / "boxes"))
        deleted = await http.delete("/platform/agents/coder", headers=PLATFORM_OPERATOR)
        assert deleted.status_code == 200, deleted.text
        sandboxes = deleted.json()["sandboxes"]
        assert sandboxes["pending"] is None
        [removed] = sandboxes["removed"]
        assert removed.startswith("a.coder~~")
        assert sorted(os.listdir(sandbox_dir / "boxes")) == [b for b in made if b != removed]

        await deployed("coder")
        seen = await output("coder", "cat notes.txt")
        assert "No such file" in seen
        assert "written-by-coder" not in seen
        assert "written-by-other" in await output("other", "cat notes.txt")
