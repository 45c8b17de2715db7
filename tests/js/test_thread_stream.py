"""The JS SDK's thread-centric streaming client (`client.threads.stream`) over SSE and over a
WebSocket, against a real server, asserting on what an app sees: a run with a tool call and
an approval gate answered with `input.respond`; a run cancelled through REST; a follow-up
run on the same thread stream; a subagent's projections; every connection dropped mid-run;
projections opened after the run; and a second user on the first user's thread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentctl.testing.identity import IdpBServer
from tests.js.conftest import run_node
from tests.server.conftest import running_server, with_auth, write_gated

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


# -- what an app sees in other situations (tests/js/scripts/thread_scenarios.mjs) ------------

TRANSPORTS = ["sse", "websocket"]
# The answer after the subagent streams for a while, so the projection the app opens on the
# subagent when it shows up is made well before the run ends: the SDK pauses a projection
# made before the run's end at that end, even while the history it asked for is on its way.
DELEGATE = (
    '@call task {"description": "say hi", "subagent_type": "helper"}\n@slow 0.05 @say '
    "delegated: {last_tool_result}"
)


async def scenario(
    node: str,
    tmp_path: Path,
    scenario: str,
    transport: str,
    *,
    project: Path | None = None,
    **args: Any,
) -> dict[str, Any]:
    """One scenario of thread_scenarios.mjs against the agent `gated` (`project`, or
    write_gated's)."""
    project = project or write_gated(tmp_path / "gated")
    async with running_server(project, tmp_path / "data") as running:
        result = await run_node(
            node,
            "thread_scenarios.mjs",
            {
                "scenario": scenario,
                "api": running.url,
                "transport": transport,
                "assistant": "gated",
                **args,
            },
        )
    assert result["ok"], json.dumps(result, indent=1)
    return result


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_run_cancelled_mid_way_ends_the_stream_as_failed(
    node: str, js_packages: Path, tmp_path: Path, transport: str
) -> None:
    words = " ".join(f"w{i}" for i in range(40))
    result = await scenario(
        node,
        tmp_path,
        "cancel",
        transport,
        prompt=f"@slow 0.05 @say {words}",
    )
    report = json.dumps(result, indent=1)
    assert result["end"]["event"] == "failed", report
    assert "cancelled" in result["end"]["error"], report
    assert result["interrupted"] is False, report
    assert result["runStatus"] == "interrupted", report
    # The answer was cut short, and the app is told the message did not finish.
    assert result["textBeforeEnd"], report
    assert words.startswith(result["textBeforeEnd"]), report
    assert result["textBeforeEnd"] != words, report
    [message] = result["messages"]
    assert message["text"] == result["textBeforeEnd"], report
    assert message["error"] == {"message": "the run was cancelled", "code": "cancelled"}, report
    events = result["events"]
    root_lifecycle = [
        e["event"] for e in events if e["method"] == "lifecycle" and not e["namespace"]
    ]
    assert root_lifecycle == ["running", "failed"], report
    assert [e["event"] for e in events if e["method"] == "messages"][-1] == "error", report


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_follow_up_run_streams_on_the_same_thread_stream(
    node: str, js_packages: Path, tmp_path: Path, transport: str
) -> None:
    result = await scenario(
        node,
        tmp_path,
        "followup",
        transport,
        texts=["first answer", "second answer"],
    )
    report = json.dumps(result, indent=1)
    first, second = result["runs"]
    assert (first["end"], first["text"]) == ("completed", "first answer"), report
    assert (second["end"], second["text"]) == ("completed", "second answer"), report
    assert first["lastMessage"] == {"type": "ai", "text": "first answer"}, report
    assert second["lastMessage"] == {"type": "ai", "text": "second answer"}, report
    # Each run's events are its own: lifecycle event ids carry the run id.
    assert first["lifecycleRunIds"] == [first["runId"]], report
    assert second["lifecycleRunIds"] == [second["runId"]], report
    assert [m["text"] for m in result["stateMessages"] if m["type"] == "ai"] == [
        "first answer",
        "second answer",
    ], report
    ids = [e["event_id"] for e in result["events"]]
    assert len(ids) == len(set(ids)), report


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_subagents_output_shows_in_its_projections(
    node: str, js_packages: Path, tmp_path: Path, transport: str
) -> None:
    result = await scenario(
        node,
        tmp_path,
        "subagent",
        transport,
        prompt=DELEGATE,
    )
    report = json.dumps(result, indent=1)
    reply = "scripted reply to: say hi"
    [sub] = result["subagents"]
    assert (sub["name"], sub["taskInput"]) == ("helper", "say hi"), report
    assert reply in json.dumps(sub["output"]), report
    [graph] = result["subgraphs"]
    assert graph["namespace"][0].startswith("tools:"), report
    assert graph["graphName"] == "helper", report
    assert graph["cause"] == {"type": "toolCall", "tool_call_id": sub["callId"]}, report
    assert graph["toolName"] == "task", report
    assert graph["message"]["text"] == reply, report
    assert graph["message"]["namespace"] == graph["namespace"], report
    assert result["output"] == {"type": "ai", "text": f"delegated: {reply}"}, report
    [child] = result["tree"]["children"]
    assert (child["graph_name"], child["namespace"]) == ("helper", graph["namespace"]), report


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_dropped_connection_resumes_with_nothing_lost_or_repeated(
    node: str, js_packages: Path, tmp_path: Path, transport: str
) -> None:
    words = " ".join(f"w{i}" for i in range(30))
    result = await scenario(
        node,
        tmp_path,
        "drop",
        transport,
        prompt=f"@slow 0.03 @say {words}",
        dropAfter=5,
    )
    report = json.dumps(result, indent=1)
    assert result["dropped"] > 0, report
    assert result["reconnects"], report  # the SDK did reconnect
    assert words.startswith(result["textAtDrop"]), report  # the drop came mid-answer
    assert result["textAtDrop"] not in ("", words), report
    assert result["end"] == "completed", report
    assert result["text"] == words, report  # in order, nothing lost, nothing twice
    assert result["messages"] == [{"text": words, "error": None}], report
    assert result["output"] == {"type": "ai", "text": words}, report
    ids = [e["event_id"] for e in result["events"]]
    assert len(ids) == len(set(ids)), report
    assert result["streamErrors"] == [], report


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_projections_opened_after_the_run_see_all_of_it(
    node: str, js_packages: Path, tmp_path: Path, transport: str
) -> None:
    result = await scenario(
        node,
        tmp_path,
        "late",
        transport,
        prompt='@call ls {"path": "/"}\n@say listed',
    )
    report = json.dumps(result, indent=1)
    assert result["output"] == {"type": "ai", "text": "listed"}, report
    [call] = result["toolCalls"]
    assert (call["name"], call["input"]) == ("ls", {"path": "/"}), report
    # The model's tool-calling turn, the tool's result (under its own namespace), the answer.
    texts = [(m["namespace"][:1], m["text"]) for m in result["messages"]]
    assert texts == [
        ([], ""),
        (["tools:" + result["toolCalls"][0]["callId"]], "['/memories/']"),
        ([], "listed"),
    ], report


async def test_a_user_never_reads_another_users_thread(
    node: str, js_packages: Path, tmp_path: Path, idp_b: IdpBServer
) -> None:
    project = with_auth(
        write_gated(tmp_path / "gated"), tmp_path / "signed-in", {"provider": "idp_b"}, idp_b.env
    )
    result = await scenario(
        node,
        tmp_path,
        "auth",
        "sse",
        project=project,
        prompt="@say private",
        alice=idp_b.mint("alice"),
        bob=idp_b.mint("bob"),
    )
    report = json.dumps(result, indent=1)
    assert result["aliceOutput"] == {"type": "ai", "text": "private"}, report
    # Over SSE Bob's requests carry his token: the thread is not found for him.
    bob = result["bobSse"]
    assert (bob["subscribe"]["ok"], bob["subscribe"]["status"]) == (False, 404), report
    for command in ("runStart", "stateGet"):  # answered as for a missing thread
        assert not bob[command]["ok"], report
        assert "not found" in bob[command]["error"], report
    # The SDK never opens a socket with headers (a browser could not send them).
    assert not result["wsWithHeaders"]["ok"], report
    assert "does not support defaultHeaders" in result["wsWithHeaders"]["error"], report
    # Without headers the socket opens unsigned and is closed with 4401: the command fails
    # (the socket is gone) and the stream's error says why, with status 401.
    unsigned = result["wsUnsigned"]
    assert not unsigned["ok"], report
    [refusal] = unsigned["onError"]
    assert refusal["status"] == 401, report
    assert refusal["error"].startswith("Protocol WebSocket closed by the server: 4401"), report
    assert "Bearer" in refusal["error"], report
    # A socket factory that sends the header itself (Node's `ws`) is the way in: Bob is
    # refused with 4404 (as for a missing thread), Alice reads her thread.
    assert not result["wsBob"]["ok"], report
    assert [e["status"] for e in result["wsBob"]["onError"]] == [404], report
    assert result["wsAlice"] == {
        "ok": True,
        "error": None,
        "last": {"type": "ai", "text": "private"},
    }, report
