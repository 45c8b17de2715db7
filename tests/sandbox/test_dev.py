"""The platform sandbox under `agentctl dev`: its server watches the event loop for blocking
calls, and the sandbox service running in it must make none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from agentctl.testing import ScriptedModelServer
from tests.conftest import sandbox_project
from tests.server.conftest import call
from tests.test_dev import answer, dev_server, user


@pytest.fixture
def scripted_env(model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in model_server.env.items():
        monkeypatch.setenv(name, value)


@pytest.mark.usefixtures("scripted_env")
async def test_execute_and_the_file_tools_work_with_blocking_detection_on(
    tmp_path: Path, sandbox_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    project = sandbox_project(tmp_path / "coder")
    write = call("write_file", file_path="/workspace/notes.txt", content="written by the agent")
    script = (
        f"{write}\n{call('execute', command='cat notes.txt; echo; echo ran')}\n"
        f"{call('read_file', file_path='/workspace/notes.txt')}\n"
        "@say {last_tool_result}"
    )
    async with (
        dev_server(project, allow_blocking=False) as dev,
        get_client(url=dev.url, api_key=None) as client,
    ):
        thread = (await client.threads.create())["thread_id"]
        result: Any = await client.runs.wait(thread, "coder", input=user(script))
        tools = [m["content"] for m in result["messages"] if m["type"] == "tool"]
        listing = f"{call('execute', command='ls')}\n@say {{last_tool_result}}"
        second: Any = await client.runs.wait(thread, "coder", input=user(listing))
    assert answer(result)
    assert "written by the agent\nran" in tools[1], tools
    assert "written by the agent" in answer(result)
    assert "notes.txt" in answer(second)
    printed = capfd.readouterr()
    assert "blocking call" not in printed.out + printed.err
    assert "Traceback" not in printed.out + printed.err
