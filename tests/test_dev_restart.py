"""`agentctl dev` killed with SIGKILL in the middle of a run: restarted, it finishes the run
with `attempt` 2, without repeating the side effect its last checkpoint covers."""

from __future__ import annotations

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
