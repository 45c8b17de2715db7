"""The values filter of thread search on both backends: the threads the database selects are
read channel by channel from their checkpoints, plain and delta channels alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.types import StateUpdate

from agentctl.engine import Deployment, RunEngine
from agentctl.errors import Unprocessable
from agentctl.project import load_project
from agentctl.runtime import load_agent
from agentctl.server.context import Server
from agentctl.server.limits import Limits
from agentctl.server.state_view import thread_config
from agentctl.server.values_search import search_by_values
from agentctl.storage.base import Page, Storage, Thread, ThreadFilter, new_id
from agentctl.testing import ScriptedModelServer


async def _thread(server: Server, group: str, values: dict[str, Any] | None) -> str:
    thread_id = new_id()
    await server.storage.threads.create(Thread(thread_id, metadata={"group": group}))
    if values is not None:
        graph = server.deployment.runtime.graph
        await graph.abulk_update_state(thread_config(thread_id), [[StateUpdate(values, "model")]])
    return thread_id


async def test_values_search(
    storage: Storage, demo: Path, model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in model_server.env.items():
        monkeypatch.setenv(name, value)
    runtime = await load_agent(
        load_project(demo), "rev-1", store=storage.store, checkpointer=storage.checkpointer
    )
    deployment = Deployment(runtime)
    server = Server(storage, deployment, RunEngine(storage, deployment))
    server.limits = Limits(max_search_scan=5)
    hello = [{"role": "user", "content": "hello"}]
    pinned = [await _thread(server, "a", {"pinned_skills": ["review"], "messages": hello})]
    pinned.append(await _thread(server, "a", {"pinned_skills": ["review"]}))
    other = await _thread(server, "a", {"pinned_skills": ["other"]})
    await _thread(server, "a", None)  # no checkpoint yet: matches nothing
    said = await _thread(server, "b", {"messages": hello})

    async def search(wanted: dict[str, Any], group: str | None = None, **page: Any) -> Any:
        where = ThreadFilter({"group": group} if group else {})
        found, total = await search_by_values(server, wanted, where, Page(**{"limit": 10, **page}))
        return {t.thread_id for t in found}, total

    assert await search({"pinned_skills": ["review"]}) == (set(pinned), 2)
    assert await search({"pinned_skills": ["other"]}, "a") == ({other}, 1)
    assert await search({"pinned_skills": ["other"]}, "b") == (set(), 0)
    page = await search({"pinned_skills": ["review"]}, limit=1, offset=1)
    assert len(page[0]) == 1
    assert page[1] == 2

    async def messages_of(thread_id: str) -> list[dict[str, Any]]:
        state = await runtime.graph.aget_state(thread_config(thread_id))
        return [message.model_dump() for message in state.values["messages"]]

    # A delta channel, rebuilt from its writes (each message has an id of its own).
    assert await search({"messages": await messages_of(said)}) == ({said}, 1)
    both = {"pinned_skills": ["review"], "messages": await messages_of(pinned[0])}
    assert await search(both) == ({pinned[0]}, 1)
    assert await search({**both, "pinned_skills": ["other"]}) == (set(), 0)

    await _thread(server, "b", None)
    with pytest.raises(Unprocessable) as refused:
        await search({"pinned_skills": []})
    assert refused.value.status == 422
    assert "AGENTCTL_MAX_SEARCH_SCAN" in str(refused.value)
