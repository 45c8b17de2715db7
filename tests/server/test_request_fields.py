"""Every field a request model declares is honoured, or refused (422 naming it) when a
client sets it to something the server would not do — never accepted and dropped. What the
official SDK sends by default keeps working; undeclared fields stay ignored."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.conftest import eventually
from tests.server.conftest import Running, user


async def test_feedback_keys_are_refused(agent: Running, http: httpx.AsyncClient) -> None:
    thread = await agent.client.threads.create()
    path = f"/threads/{thread['thread_id']}/runs"
    body = {"assistant_id": "demo", "input": user("x"), "feedback_keys": ["score"]}
    answer = await http.post(path, json=body)
    assert answer.status_code == 422
    assert answer.json()["detail"].startswith("body feedback_keys: ")
    assert await agent.client.runs.list(thread["thread_id"]) == []
    # An empty list asks for nothing: accepted.
    assert (await http.post(path, json={**body, "feedback_keys": []})).status_code == 200


async def test_on_completion_delete_is_refused_on_a_threads_run(
    agent: Running, http: httpx.AsyncClient
) -> None:
    thread = await agent.client.threads.create()
    path = f"/threads/{thread['thread_id']}/runs/wait"
    body = {"assistant_id": "demo", "input": user("y"), "on_completion": "delete"}
    answer = await http.post(path, json=body)
    assert answer.status_code == 422
    assert answer.json()["detail"].startswith("on_completion: ")
    kept = await http.post(path, json={**body, "on_completion": "keep"})
    assert kept.json()["messages"][-1]["content"] == "scripted reply to: y"
    assert await agent.client.threads.get(thread["thread_id"])


async def test_on_run_completed_delete_is_refused_on_a_threads_cron(
    agent: Running, http: httpx.AsyncClient
) -> None:
    thread = await agent.client.threads.create()
    path = f"/threads/{thread['thread_id']}/runs/crons"
    body = {"assistant_id": "demo", "schedule": "0 0 1 1 *", "on_run_completed": "delete"}
    answer = await http.post(path, json=body)
    assert answer.status_code == 422
    assert answer.json()["detail"].startswith("on_run_completed: ")
    cron = (await http.post(path, json={**body, "on_run_completed": None})).json()
    patched = await http.patch(
        f"/runs/crons/{cron['cron_id']}", json={"on_run_completed": "delete"}
    )
    assert patched.status_code == 422


async def test_a_superstep_command_is_refused(http: httpx.AsyncClient) -> None:
    update = {"command": {"goto": "model"}, "as_node": "model"}
    answer = await http.post("/threads", json={"supersteps": [{"updates": [update]}]})
    assert answer.status_code == 422
    assert "supersteps.0.updates.0.command: " in answer.json()["detail"]


async def test_wait_with_on_disconnect_cancel_cancels_the_run_when_the_client_leaves(
    agent: Running,
) -> None:
    thread = await agent.client.threads.create()
    body = {"assistant_id": "demo", "input": user("@sleep 30 @say late"), "on_disconnect": "cancel"}

    async def wait() -> None:
        async with httpx.AsyncClient(base_url=agent.url, timeout=60) as http:
            await http.post(f"/threads/{thread['thread_id']}/runs/wait", json=body)

    waiting = asyncio.create_task(wait())

    async def running() -> list[Any]:
        runs = await agent.client.runs.list(thread["thread_id"])
        return [run for run in runs if run["status"] == "running"]

    [run] = await eventually(running)
    waiting.cancel()  # the client goes away
    with pytest.raises(asyncio.CancelledError):
        await waiting

    async def interrupted() -> bool:
        current: Any = await agent.client.runs.get(thread["thread_id"], run["run_id"])
        return bool(current["status"] == "interrupted")

    await eventually(interrupted)


async def test_what_the_sdk_sends_by_default_is_accepted(agent: Running) -> None:
    thread = await agent.client.threads.create()
    events = [
        part.event
        async for part in agent.client.runs.stream(
            thread["thread_id"],
            "demo",
            input=user("defaults"),
            stream_resumable=True,
            stream_subgraphs=False,
            multitask_strategy="enqueue",
            if_not_exists="reject",
            on_disconnect="continue",
            webhook=None,
            feedback_keys=None,
        )
    ]
    assert "error" not in events
    [run] = await agent.client.runs.list(thread["thread_id"])
    assert run["status"] == "success"


async def test_a_checkpoint_of_another_thread_is_refused(
    agent: Running, http: httpx.AsyncClient
) -> None:
    thread = await agent.client.threads.create()
    other = await agent.client.threads.create()
    await agent.client.runs.wait(thread["thread_id"], "demo", input=user("one"))
    state: Any = await agent.client.threads.get_state(thread["thread_id"])
    mine = state["checkpoint"]
    theirs = {**mine, "thread_id": other["thread_id"]}
    answer = await http.post(f"/threads/{thread['thread_id']}/state/checkpoint",
                             json={"checkpoint": theirs})  # fmt: skip
    assert answer.status_code == 422
    assert answer.json()["detail"].startswith("checkpoint.thread_id: ")
    run = await http.post(
        f"/threads/{thread['thread_id']}/runs",
        json={"assistant_id": "demo", "input": user("two"), "checkpoint": theirs},
    )
    assert run.status_code == 422
    assert run.json()["detail"].startswith("checkpoint.thread_id: ")
    same: Any = await agent.client.threads.get_state(thread["thread_id"], checkpoint=mine)
    assert same["checkpoint"]["checkpoint_id"] == mine["checkpoint_id"]
