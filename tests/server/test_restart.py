"""A run accepted is never lost: a server that stops mid-run resumes it on restart from its
last checkpoint, with `attempt` 2, without repeating what the checkpoint already covers."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from agentctl.testing.mcp_servers import Ledger
from tests.conftest import PAYING_SCRIPT as SCRIPT
from tests.conftest import ledger_project
from tests.server.conftest import running_server, user


@pytest.mark.slow
async def test_stopped_server_resumes_the_run_on_restart(
    tmp_path: Path, ledger: tuple[Ledger, int]
) -> None:
    book, port = ledger
    root = ledger_project(tmp_path / "payer", port)
    data = tmp_path / "data"
    thread_id = str(uuid.uuid4())
    async with running_server(root, data) as first:
        run = await first.client.runs.create(
            thread_id, "payer", input=user(SCRIPT), if_not_exists="create"
        )
        for _ in range(300):
            if book.entries:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # the tool's result is checkpointed; the model sleeps
    assert book.entries == ["paid"]
    async with running_server(root, data) as second:
        values = await second.client.runs.join(thread_id, run["run_id"])
        done = await second.client.runs.get(thread_id, run["run_id"])
        parts = [
            p
            async for p in second.client.runs.join_stream(
                thread_id, run["run_id"], last_event_id="-"
            )
        ]
    assert done["status"] == "success"
    assert values["messages"][-1]["content"] == "done"
    assert book.entries == ["paid"]
    attempts = [p.data["attempt"] for p in parts if p.event == "metadata"]
    assert attempts == [1, 2]
