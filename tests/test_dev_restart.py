"""`agentctl dev` killed with SIGKILL, or stopped with Ctrl-C, in the middle of a run:
restarted, it finishes the run with `attempt` 2, without repeating the side effect its last
checkpoint covers."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from agentctl.testing import ScriptedModelServer
from agentctl.testing.mcp_servers import Ledger
from agentctl.testing.services import free_port
from tests.conftest import PAYING_SCRIPT as SCRIPT
from tests.conftest import ledger_project
from tests.dev_process import DevProcess

# `agentctl dev` killed and started again mid-run: seconds.
pytestmark = pytest.mark.slow


async def test_sigkilled_dev_server_resumes_the_run_with_attempt_2(
    tmp_path: Path, ledger: tuple[Ledger, int]
) -> None:
    book, ledger_port = ledger
    root = ledger_project(tmp_path / "payer", ledger_port)
    with ScriptedModelServer(keep_alive=False) as model:
        env = {**os.environ, **model.env}
        port = str(free_port())
        first = DevProcess(["--port", port], env, root)
        try:
            url = first.ready()
            client = get_client(url=url, api_key=None)
            thread_id = str(uuid.uuid4())
            paying: dict[str, Any] = {"messages": [{"role": "user", "content": SCRIPT}]}
            run = await client.runs.create(
                thread_id,
                "payer",
                input=paying,
                if_not_exists="create",
            )
            deadline = time.monotonic() + 30
            while not book.entries and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.3)  # the tool's result is checkpointed; the model is sleeping
            first.proc.send_signal(signal.SIGKILL)
            first.proc.wait(10)
            await client.http.client.aclose()
        finally:
            first.close()
        assert book.entries == ["paid"]
        second = DevProcess(["--port", port], env, root)
        try:
            url = second.ready()
            client = get_client(url=url, api_key=None)
            values = await client.runs.join(thread_id, run["run_id"])
            done = await client.runs.get(thread_id, run["run_id"])
            parts = [
                p
                async for p in client.runs.join_stream(thread_id, run["run_id"], last_event_id="-")
            ]
            await client.http.client.aclose()
        finally:
            second.stop()
    assert done["status"] == "success"
    assert values["messages"][-1]["content"] == "done"
    assert book.entries == ["paid"]
    assert [p.data["attempt"] for p in parts if p.event == "metadata"] == [1, 2]


# A model call long enough to be under way when the signal comes: a chunk a second.
ANSWER = "one two three four"
SLOW_ANSWER = f"@slow 1.0 @say {ANSWER}"


async def test_ctrl_c_mid_run_is_quick_and_the_run_resumes_on_restart(tmp_path: Path) -> None:
    root = tmp_path / "slow"
    root.mkdir()
    (root / "agent.toml").write_text('[agent]\nname = "slow"\nmodel = "openai:scripted"\n')
    (root / "AGENTS.md").write_text("You answer slowly.\n")
    thread_id = str(uuid.uuid4())
    with ScriptedModelServer(keep_alive=False) as model:
        env = {**os.environ, **model.env}
        port = str(free_port())
        first = DevProcess(["--port", port], env, root)
        try:
            client = get_client(url=first.ready(), api_key=None)
            seen: list[Any] = []
            asking: dict[str, Any] = {"messages": [{"role": "user", "content": SLOW_ANSWER}]}
            stream: Any = client.runs.stream(
                thread_id,
                "slow",
                input=asking,
                if_not_exists="create",
                stream_mode="messages-tuple",
                on_disconnect="cancel",  # a stop is not the client going away
            )
            async for part in stream:
                seen.append(part)
                if part.event == "messages":  # the model is answering
                    break
            # A client waiting for the run's result too: its response is cut short.
            joining = asyncio.create_task(client.runs.join(thread_id, seen[0].data["run_id"]))
            await asyncio.sleep(0.2)
            began = time.monotonic()
            assert first.stop(signal.SIGINT) == 0
            stopped_in = time.monotonic() - began
            joining.cancel()  # (it would reconnect)
            await stream.aclose()
            await client.http.client.aclose()
        finally:
            first.close()
        run_id = seen[0].data["run_id"]
        assert stopped_in < 1.5, stopped_in  # the model call is not waited for
        assert first.lines["out"][-1] == "stopped"
        said = [line for line in first.lines["err"] if "unfinished run" in line]
        assert said == [
            "INFO agentctl.engine: 1 unfinished run was stopped; it resumes from its last "
            "checkpoint the next time `agentctl dev` starts"
        ]
        for noise in ("Traceback", "Error", "other replicas", "dropped"):
            assert noise not in first.err

        second = DevProcess(["--port", port], env, root)
        try:
            client = get_client(url=second.ready(), api_key=None)
            rejoined = [
                part
                async for part in client.runs.join_stream(
                    thread_id, run_id, last_event_id=seen[-1].id
                )
            ]
            done = await client.runs.get(thread_id, run_id)
            state: Any = await client.threads.get_state(thread_id)
            replay = [
                p async for p in client.runs.join_stream(thread_id, run_id, last_event_id="-")
            ]
            await client.http.client.aclose()
        finally:
            second.stop()
    assert rejoined[-1].event == "end"
    assert rejoined[-1].data == {"run_id": run_id, "status": "success"}
    assert done["status"] == "success"
    assert state["values"]["messages"][-1]["content"] == ANSWER
    # The events of the first attempt were kept; the second attempt resumed the run.
    assert [p.data["attempt"] for p in replay if p.event == "metadata"] == [1, 2]
    assert seen[-1].id in [p.id for p in replay]
