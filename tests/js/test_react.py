"""The official React hook (`useStream` of @langchain/langgraph-sdk/react) in headless
Chromium, on the classic runs API, against a real server: a reload mid-run, and a deep
agent's page with its subagents apart."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import chat_project
from tests.js.conftest import run_node
from tests.server.conftest import running_server, write_gated

ANSWER = "the answer streams in word by word and survives a reload of the page"


async def test_a_reload_mid_run_rejoins_the_stream_and_shows_the_whole_answer(
    node: str, chromium: str, page_dir: Path, tmp_path: Path
) -> None:
    """`reconnectOnMount`: the hook keeps the run id in sessionStorage; after a reload it
    reads the thread's state, joins the run's stream from the start (`Last-Event-ID: -1`) and
    shows the answer the run goes on producing while no page is connected."""
    project = chat_project(tmp_path / "chat")
    async with running_server(project, tmp_path / "data") as running:
        result = await run_node(
            node,
            "react_reconnect.mjs",
            {
                "api": running.url,
                "pageDir": str(page_dir),
                "assistant": "chat",
                "prompt": f"@slow 0.2 @say {ANSWER}",
                "expected": ANSWER,
            },
            env={"CHROMIUM": chromium},
        )
    report = f"what the page did: {result}"
    assert "error" not in result, report
    # The reload happened while the run was streaming, with part of the answer shown.
    assert result["beforeReload"], report
    assert result["beforeReload"] != ANSWER, report
    assert result["runStatusAtReload"] in ("pending", "running"), report
    run_key = f"lg:stream:{result['threadId']}"
    assert run_key in result["storage"], report
    # After the reload the page joined the run's stream and showed the whole answer.
    joins = [
        request
        for request in result["log"]["requests"][result["requestsBeforeReload"] :]
        if request["method"] == "GET" and request["path"].split("?")[0].endswith("/stream")
    ]
    assert joins, report
    assert joins[0]["lastEventId"] == "-1", report
    assert all(request["status"] == 200 for request in joins), report
    assert result["afterReload"] == ANSWER, report
    assert run_key not in result["storageAfter"], report  # the finished run is forgotten
    assert result["log"]["errors"] == [], report


SUBAGENT_REPLY = "scripted reply to: say hi"
DELEGATE = (
    '@call task {"description": "say hi", "subagent_type": "helper"}\n'
    "@say delegated: {last_tool_result}"
)


async def test_a_deep_agents_page_shows_each_subagent_apart_before_and_after_a_reload(
    node: str, chromium: str, page_dir: Path, tmp_path: Path
) -> None:
    """`filterSubagentMessages`: the subagent's messages stay out of the conversation and
    show in its card, live (subgraph events) and after a reload, when the hook finds the
    subagent's namespace in the thread's history (its task's `path`) and reads its state."""
    async with running_server(write_gated(tmp_path / "gated"), tmp_path / "data") as running:
        result = await run_node(
            node,
            "react_subagents.mjs",
            {
                "api": running.url,
                "pageDir": str(page_dir),
                "assistant": "gated",
                "prompt": DELEGATE,
                "expected": f"delegated: {SUBAGENT_REPLY}",
            },
            env={"CHROMIUM": chromium},
        )
    report = json.dumps(result, indent=1)
    assert result["ok"], report
    for moment in ("live", "reloaded"):
        shown = result[moment]
        texts = [(m["type"], m["text"]) for m in shown["messages"]]
        # The conversation: the question, the delegating turn, the tool's answer, the answer;
        # nothing of the subagent's own conversation.
        assert texts[0] == ("human", DELEGATE), (moment, report)
        assert texts[-1] == ("ai", f"delegated: {SUBAGENT_REPLY}"), (moment, report)
        assert ("human", "say hi") not in texts, (moment, report)
        [card] = shown["subagents"]
        assert (card["type"], card["task"], card["status"]) == ("helper", "say hi", "complete")
        assert card["text"] == SUBAGENT_REPLY, (moment, report)
    assert result["live"]["subagents"][0]["call"] == result["reloaded"]["subagents"][0]["call"]
    assert result["pageError"] is None, report
    assert result["log"]["errors"] == [], report
