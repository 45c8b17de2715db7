"""The JS SDK's thread-centric streaming client (`client.threads.stream`) over SSE and over a
WebSocket, against a real server: a run with a tool call and an approval gate, answered with
`input.respond`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.js.conftest import run_node
from tests.server.conftest import running_server

GATED = '[agent]\nname = "gated"\nmodel = "openai:scripted"\n[interrupt_on]\nwrite_file = true\n'
SCRIPT = "\n".join([
    '@call ls {"path": "/"}',
    '@call write_file {"file_path": "/notes.md", "content": "hello"}',
    "@slow 0.05 @say saved: {last_tool_result}",
])  # fmt: skip
APPROVE = {"decisions": [{"type": "approve"}]}


def gated_project(root: Path) -> Path:
    root.mkdir()
    (root / "agent.toml").write_text(GATED)
    (root / "AGENTS.md").write_text("You write notes.\n")
    return root


@pytest.mark.skip(reason="needs the thread-centric protocol")
@pytest.mark.parametrize("transport", ["sse", "websocket"])
async def test_a_run_streams_values_messages_tool_calls_and_resumes_after_an_interrupt(
    node: str, js_packages: Path, tmp_path: Path, transport: str
) -> None:
    async with running_server(gated_project(tmp_path / "gated"), tmp_path / "data") as running:
        result = await run_node(
            node,
            "thread_stream.mjs",
            {
                "api": running.url,
                "assistant": "gated",
                "transport": transport,
                "prompt": SCRIPT,
                "response": APPROVE,
            },
        )
    report = json.dumps(result, indent=1)
    assert result["ok"], report
    assert isinstance(result["runId"], str), report
    assert result["streamErrors"] == [], report
    # The first run stops at the approval gate of write_file, after ls ran.
    assert result["firstEnd"] == "interrupted", report
    assert result["interrupted"], report
    [interrupt] = result["interrupts"]
    assert interrupt["namespace"] == [], report
    assert interrupt["payload"]["action_requests"][0]["name"] == "write_file", report
    [ls] = result["toolCalls"]
    assert (ls["name"], ls["input"]) == ("ls", {"path": "/"}), report
    assert ls["output"] is not None, report
    assert any(m["namespace"] == [] for m in result["messages"]), report
    assert [m["type"] for m in result["firstValues"]][:1] == ["human"], report
    # The answer resumes the run, which writes the file and says so.
    assert result["secondEnd"] == "completed", report
    final = result["finalValues"][-1]
    assert final["type"] == "ai", report
    assert final["text"].startswith("saved: "), report
    events: list[dict[str, Any]] = result["events"]  # by seq (SSE delivers them out of order)
    root_lifecycle = [
        e["event"]
        for e in events
        if e["method"] == "lifecycle" and e["namespace"] == [] and e["event"] != "started"
    ]
    assert root_lifecycle == ["running", "interrupted", "running", "completed"], report
    assert any(e["method"] == "input.requested" for e in events), report
    assert {"values", "messages", "tools", "updates", "checkpoints"} <= {
        e["method"] for e in events
    }, report
    ids = [e["event_id"] for e in events]
    assert None not in ids, report
    assert len(set(ids)) == len(ids), report
    seqs = [e["seq"] for e in events]
    assert all(isinstance(seq, int) for seq in seqs), report
    assert len(set(seqs)) == len(seqs), report
