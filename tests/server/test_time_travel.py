"""Time travel through the official SDK, as the console does it: a run with new input from
the checkpoint before a message, and a state update at a checkpoint then a run on from it,
each make a branch beside the old one; the history holds both, linked by their parents."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph_sdk.errors import NotFoundError
from langgraph_sdk.schema import Checkpoint

from tests.server.conftest import Running, error_detail, user

NOWHERE = "1f000000-0000-6000-8000-000000000000"


def answers(values: Any) -> list[str]:
    return [m["content"] for m in values["messages"] if m["type"] == "ai"]


def children_of(history: list[Any], parent_id: str) -> list[Any]:
    return [s for s in history if (s["parent_checkpoint"] or {}).get("checkpoint_id") == parent_id]


async def test_a_run_from_an_earlier_checkpoint_makes_a_branch(agent: Running) -> None:
    client = agent.client
    thread_id = (await client.threads.create())["thread_id"]
    for text in ("@say first", "@say second"):
        await client.runs.wait(thread_id, "demo", input=user(text))
    history: list[Any] = await client.threads.get_history(thread_id, limit=200)
    # The checkpoint where the second message first shows, and the one before it.
    seen = [s for s in history if "@say second" in str(s["values"].get("messages"))][-1]
    before = seen["parent_checkpoint"]["checkpoint_id"]

    values: Any = await client.runs.wait(
        thread_id, "demo", input=user("@say second, edited"), checkpoint_id=before
    )
    assert answers(values) == ["first", "second, edited"]
    history = await client.threads.get_history(thread_id, limit=200)
    branches = children_of(history, before)
    assert len(branches) == 2
    assert seen["checkpoint"] in [b["checkpoint"] for b in branches]
    # Both branches' answers are in the history; the thread's state is the newest branch.
    ends = [s for s in history if not s["next"]]
    assert {tuple(answers(s["values"])) for s in ends} >= {
        ("first", "second"),
        ("first", "second, edited"),
    }
    latest: Any = await client.threads.get_state(thread_id)
    assert answers(latest["values"]) == ["first", "second, edited"]
    assert latest["checkpoint"] == history[0]["checkpoint"]

    # A checkpoint the thread does not have: 404 naming it, and nothing runs or is written
    # (langgraph alone would start from an empty state, under a parent that is nowhere).
    with pytest.raises(NotFoundError) as run_from_nowhere:
        await client.runs.create(thread_id, "demo", input=user("@say lost"), checkpoint_id=NOWHERE)
    assert f"checkpoint_id: checkpoint '{NOWHERE}' not found" in error_detail(run_from_nowhere)
    nowhere = Checkpoint(
        thread_id=thread_id, checkpoint_ns="", checkpoint_id=NOWHERE, checkpoint_map=None
    )
    with pytest.raises(NotFoundError):
        await client.runs.create(thread_id, "demo", checkpoint=nowhere)
    with pytest.raises(NotFoundError) as edit_nowhere:
        await client.threads.update_state(thread_id, {"messages": []}, checkpoint_id=NOWHERE)
    assert "checkpoint_id" in error_detail(edit_nowhere)
    assert await client.threads.get_history(thread_id, limit=200) == history
    assert len(await client.runs.list(thread_id)) == 3


async def test_a_state_edit_at_a_checkpoint_runs_on_from_it(agent: Running) -> None:
    client = agent.client
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, "demo", input=user("@say first\n@say ignored"))
    history: list[Any] = await client.threads.get_history(thread_id, limit=200)
    # The checkpoint before the model answered: the human message only.
    before_model = next(s for s in reversed(history) if s["next"] == ["model"])
    human = dict(before_model["values"]["messages"][-1])
    human["content"] = "@say rewritten"
    saved = await client.threads.update_state(
        thread_id, {"messages": [human]}, checkpoint_id=before_model["checkpoint"]["checkpoint_id"]
    )
    at_edit: Any = await client.threads.get_state(
        thread_id, checkpoint_id=saved["checkpoint"]["checkpoint_id"]
    )
    assert at_edit["metadata"] is not None
    assert at_edit["metadata"]["source"] == "update"
    assert at_edit["next"] == ["model"]
    values: Any = await client.runs.wait(
        thread_id, "demo", input=None, checkpoint_id=saved["checkpoint"]["checkpoint_id"]
    )
    assert [m["content"] for m in values["messages"]] == ["@say rewritten", "rewritten"]
    history = await client.threads.get_history(thread_id, limit=200)
    assert len(children_of(history, before_model["checkpoint"]["checkpoint_id"])) == 2
