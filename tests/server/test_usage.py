"""Exact token usage of every model call, stored with its run and read through the API:
the counts equal what the scripted model reported, on the OpenAI, Anthropic and Ollama
wires, streamed (`messages-tuple`) and not (`runs.wait`), with a subagent, MCP tools and a
called agent, and their steps nested as the calls were."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agentctl.server.platform_host import Platform
from agentctl.testing import PROVIDERS, ScriptedModelServer
from agentctl.testing.demo import write_demo
from agentctl.testing.server import Reported
from tests.conftest import eventually
from tests.server.conftest import PLATFORM_OPERATOR, Running, call, running_server, upload, user
from tests.server.test_peers import asker, asking, researcher

KEYS = ("input_tokens", "output_tokens", "cached_tokens", "total_tokens", "model_calls")
RESEARCH = call("lookup", topic="tea") + "\n@say researched: {last_tool_result}"
SCRIPT = "\n".join(
    [
        call("task", subagent_type="researcher", description=RESEARCH),
        call("add", a=2, b=3),
        "@say sum {last_tool_result}",
    ]
)


async def stored(http: httpx.AsyncClient, thread_id: str, run_id: str) -> tuple[Any, Any]:
    """The run's `usage` (on its record) and its trace, as the API serves them."""
    run = await http.get(f"/threads/{thread_id}/runs/{run_id}")
    assert run.status_code == 200, run.text
    trace = await http.get(f"/threads/{thread_id}/runs/{run_id}/trace")
    assert trace.status_code == 200, trace.text
    return run.json()["usage"], trace.json()


def tokens_only(usage: dict[str, Any]) -> dict[str, int]:
    return {key: usage[key] for key in KEYS}


async def run_once(running: Running, script: str, *, streamed: bool) -> tuple[str, str]:
    """Run `script` on a new thread, streaming `messages-tuple` or waiting; its thread and
    run ids."""
    client = running.client
    thread_id = str(uuid.uuid4())
    if streamed:
        async for part in client.runs.stream(
            thread_id,
            "demo",
            input=user(script),
            stream_mode=["messages-tuple", "values"],
            if_not_exists="create",
        ):
            assert part.event != "error", part.data
    else:
        await client.runs.wait(thread_id, "demo", input=user(script), if_not_exists="create")
    [run] = await client.runs.list(thread_id)
    assert run["status"] == "success", run
    return thread_id, str(run["run_id"])


def sums(reported: list[Reported]) -> dict[str, int]:
    return {
        "input_tokens": sum(r.usage.input for r in reported),
        "output_tokens": sum(r.usage.output for r in reported),
        "cached_tokens": sum(r.usage.cached for r in reported),
        "total_tokens": sum(r.usage.total for r in reported),
        "model_calls": len(reported),
    }


def children(steps: list[dict[str, Any]], parent: int | None) -> list[dict[str, Any]]:
    return [step for step in steps if step["parent_id"] == parent]


def kinds(steps: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(step["kind"], step["name"]) for step in steps]


@pytest.mark.parametrize("streamed", [True, False], ids=["messages-tuple", "wait"])
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_runs_tokens_are_what_the_model_reported(
    provider: str,
    streamed: bool,
    model_server: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    calc_port: int,
    library_port: int,
) -> None:
    for name, value in model_server.env_for(provider).items():
        monkeypatch.setenv(name, value)
    model = f"{provider}:scripted"
    demo = write_demo(
        tmp_path / "demo",
        f"http://127.0.0.1:{calc_port}/mcp",
        f"http://127.0.0.1:{library_port}/sse",
        model=model,
    )
    async with (
        running_server(demo, tmp_path / "data") as running,
        httpx.AsyncClient(base_url=running.url) as http,
    ):
        before = len(model_server.reported)
        thread_id, run_id = await run_once(running, SCRIPT, streamed=streamed)
        reported = model_server.reported[before:]
        usage, trace = await stored(http, thread_id, run_id)

    # Five model calls: the main agent's three, the subagent's two; each reported its usage.
    assert [r.wire for r in reported] == [provider] * 5
    if provider != "ollama":  # langchain-ollama always streams
        assert {r.stream for r in reported} == {streamed}
    expected = sums(reported)
    assert tokens_only(usage) == expected
    assert list(usage["models"]) == [model]
    assert tokens_only(usage["models"][model]) == expected
    # Where the wire has a prompt cache, its reads are counted (part of the input).
    assert (expected["cached_tokens"] > 0) == (provider != "ollama")

    # The steps, nested as the calls were: the subagent's calls inside its `task`.
    steps = trace["steps"]
    assert not trace["truncated"]
    top = children(steps, None)
    assert kinds(top) == [
        ("model", model),
        ("subagent", "researcher"),
        ("model", model),
        ("mcp", "calc/add"),
        ("model", model),
    ]
    task = top[1]
    assert kinds(children(steps, task["id"])) == [
        ("model", model),
        ("mcp", "library/lookup"),
        ("model", model),
    ]
    assert all(step["duration_ms"] is not None and step["duration_ms"] >= 0 for step in steps)
    assert task["duration_ms"] >= sum(s["duration_ms"] for s in children(steps, task["id"]))
    # Each model call's step has the tokens its answer reported, in the order they came.
    calls = [step for step in steps if step["kind"] == "model"]
    assert [tokens_of_step(step) for step in calls] == [
        (r.usage.input, r.usage.output, r.usage.cached) for r in reported
    ]
    finish = {"openai": "stop", "anthropic": "end_turn", "ollama": "stop"}[provider]
    assert calls[-1]["finish_reason"] == finish


def tokens_of_step(step: dict[str, Any]) -> tuple[int, int, int]:
    return step["input_tokens"], step["output_tokens"], step["cached_tokens"]


async def test_a_called_agent_counts_its_own_tokens_on_its_own_run(
    platform: tuple[Platform, httpx.AsyncClient], tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    _, http = platform
    for root in (researcher(tmp_path / "researcher"), asker(tmp_path / "asker")):
        deployed = await upload(http, root, model_server)
        assert deployed.status_code == 201, deployed.text
    question = "@say found it"
    theirs_thread, ours_thread = str(uuid.uuid4()), str(uuid.uuid4())
    before = len(model_server.reported)
    answer = await http.post(
        f"/agents/asker/threads/{ours_thread}/runs/wait",
        json={"assistant_id": "asker", "input": asking(theirs_thread, question),
              "if_not_exists": "create"},
        headers=PLATFORM_OPERATOR,
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert answer.json()["messages"][-1]["content"] == "found it"
    reported = model_server.reported[before:]

    # Each run counts the calls its own model made: the caller's two, the called one's one.
    theirs = [r for r in reported if r.marker == question]
    ours = [r for r in reported if r.marker != question]
    assert (len(ours), len(theirs)) == (2, 1)
    traces = {}
    for agent, thread_id, made in (
        ("asker", ours_thread, ours),
        ("researcher", theirs_thread, theirs),
    ):
        at = f"/agents/{agent}/threads/{thread_id}/runs"
        [run] = (await http.get(at, headers=PLATFORM_OPERATOR)).json()
        assert list(run["usage"]["models"]) == ["openai:scripted"]
        assert tokens_only(run["usage"]) == sums(made)
        trace = await http.get(f"{at}/{run['run_id']}/trace", headers=PLATFORM_OPERATOR)
        traces[agent] = trace.json()["steps"]
    # The caller's trace shows the call as an MCP call of the server naming the agent.
    assert kinds(traces["asker"]) == [
        ("model", "openai:scripted"),
        ("mcp", "research/researcher"),
        ("model", "openai:scripted"),
    ]
    assert kinds(traces["researcher"]) == [("model", "openai:scripted")]


async def test_tokens_are_counted_in_metrics_and_kept_when_a_run_is_cancelled(
    agent: Running, http: httpx.AsyncClient, model_server: ScriptedModelServer
) -> None:
    before, asked = len(model_server.reported), model_server.requests
    thread_id = (await agent.client.threads.create())["thread_id"]
    script = call("add", a=2, b=3) + "\n@sleep 30 @say too late"
    run = await agent.client.runs.create(thread_id, "demo", input=user(script))

    async def second_call_made() -> bool:
        return model_server.requests >= asked + 2

    await eventually(second_call_made, 10, "the second model call to be made")
    await agent.client.runs.cancel(thread_id, run["run_id"], wait=True)
    reported = model_server.reported[before:]
    usage, trace = await stored(http, thread_id, run["run_id"])
    # The answered call is counted; the one cut short reported nothing, its step says so.
    assert tokens_only(usage["models"]["openai:scripted"]) == sums(reported)
    steps = trace["steps"]
    assert kinds(steps) == [
        ("model", "openai:scripted"),
        ("mcp", "calc/add"),
        ("model", "openai:scripted"),
    ]
    assert steps[-1]["error"] == "CancelledError"
    assert "input_tokens" not in steps[-1]

    # /metrics counts the tokens by agent, model and kind.
    await agent.client.runs.wait(thread_id, "demo", input=user("@say counted"))
    reported = model_server.reported[before:]
    scraped = (await http.get("/metrics")).text
    samples = {
        sample.labels["kind"]: sample.value
        for family in text_string_to_metric_families(scraped)
        for sample in family.samples
        if sample.name == "agentctl_model_tokens_total"
        and sample.labels == {**sample.labels, "agent": "demo", "model": "openai:scripted"}
    }
    assert samples == {
        "input": sum(r.usage.input for r in reported),
        "output": sum(r.usage.output for r in reported),
        "cached": sum(r.usage.cached for r in reported),
    }


async def test_a_rolled_back_run_is_gone_but_what_it_spent_is_counted(
    agent: Running, http: httpx.AsyncClient, model_server: ScriptedModelServer
) -> None:
    before, asked = len(model_server.reported), model_server.requests
    thread_id = (await agent.client.threads.create())["thread_id"]
    script = call("add", a=2, b=3) + "\n@sleep 30 @say too late"
    run = await agent.client.runs.create(thread_id, "demo", input=user(script))

    async def second_call_made() -> bool:
        return model_server.requests >= asked + 2

    await eventually(second_call_made, 10, "the second model call to be made")
    await agent.client.runs.cancel(thread_id, run["run_id"], wait=True, action="rollback")
    reported = model_server.reported[before:]
    assert len(reported) == 1
    gone = await http.get(f"/threads/{thread_id}/runs/{run['run_id']}")
    assert gone.status_code == 404
    spent = await http.get("/usage", params={"thread_id": thread_id})
    assert spent.status_code == 200, spent.text
    assert tokens_only(spent.json()["total"]) == sums(reported)
