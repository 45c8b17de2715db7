"""A run accepted is never lost: a server that stops mid-run resumes it on restart from its
last checkpoint, with `attempt` 2, without repeating what the checkpoint already covers."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentctl.testing.mcp_servers import Ledger, serve
from tests.server.conftest import call, running_server, user


@pytest.fixture
def ledger() -> Iterator[tuple[Ledger, int]]:
    book = Ledger()
    with serve(book.server().streamable_http_app()) as port:
        yield book, port


def ledger_project(root: Path, port: int) -> Path:
    root.mkdir()
    (root / "agent.toml").write_text('[agent]\nname = "payer"\nmodel = "openai:scripted"\n')
    (root / "AGENTS.md").write_text("You pay.\n")
    (root / "mcp.json").write_text(
        json.dumps({"mcpServers": {"ledger": {"url": f"http://127.0.0.1:{port}/mcp"}}})
    )
    return root


SCRIPT = call("record", entry="paid") + "\n@sleep 1.5 @say done"


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
