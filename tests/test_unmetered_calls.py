"""A model call no agent's model step meters (one a middleware makes itself, as deepagents'
summary of a long conversation) is counted all the same, once, on each wire."""

from __future__ import annotations

import pytest

from agentctl.metering import ledger as ledgers
from agentctl.metering.ledger import Ledger
from agentctl.runtime.models import create_models
from agentctl.testing import PROVIDERS, ScriptedModelServer


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_call_outside_the_agents_steps_is_counted(
    provider: str, model_server: ScriptedModelServer
) -> None:
    name = f"{provider}:scripted"
    env = {**model_server.env_for(provider), "OPENAI_API_KEY": "scripted"}
    model = create_models([name], env)[name]
    ledger = Ledger("run-1", "thread-1", "demo")
    token = ledgers.current.set(ledger)
    before = len(model_server.reported)
    try:
        with ledger.step("subagent", "summarizer"):
            await model.ainvoke("@say a summary")
        async for _ in model.astream("@say another summary"):
            pass
    finally:
        ledgers.current.reset(token)
    reported = model_server.reported[before:]
    assert len(reported) == 2
    usage = ledger.usage_json()
    assert usage is not None
    assert usage["models"][name]["input_tokens"] == sum(r.usage.input for r in reported)
    assert usage["models"][name]["cached_tokens"] == sum(r.usage.cached for r in reported)
    assert usage["models"][name]["output_tokens"] == sum(r.usage.output for r in reported)
    assert usage["model_calls"] == 2
    steps = ledger.trace_json()["steps"]
    assert [(s["kind"], s["name"], s["parent_id"]) for s in steps] == [
        ("subagent", "summarizer", None),
        ("model", name, 1),
        ("model", name, None),
    ]
    assert all(s["duration_ms"] is not None for s in steps)


async def test_no_ledger_no_count(model_server: ScriptedModelServer) -> None:
    model = create_models(["openai:scripted"], model_server.env)["openai:scripted"]
    assert ledgers.current.get() is None
    reply = await model.ainvoke("@say unmetered")
    assert reply.usage_metadata is not None
