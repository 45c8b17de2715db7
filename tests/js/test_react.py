"""The official React hook (`useStream` of @langchain/langgraph-sdk/react) in headless
Chromium, on the classic runs API, against a real server."""

from __future__ import annotations

from pathlib import Path

from tests.js.conftest import chat_project, run_node
from tests.server.conftest import running_server

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
