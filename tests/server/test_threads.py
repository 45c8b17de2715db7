"""Threads, their state and history, through the official SDK."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from tests.server.conftest import UNKNOWN_ID, Running, assert_json_error, error_detail, user


async def ran(agent: Running, text: str = "hi", **metadata: Any) -> str:
    """A thread on which the agent answered `text` once."""
    thread = await agent.client.threads.create(metadata=metadata or None)
    await agent.client.runs.wait(thread["thread_id"], "demo", input=user(text))
    return str(thread["thread_id"])


def contents(values: object) -> list[str]:
    """The message contents of a thread's values (the SDK types them loosely)."""
    assert isinstance(values, dict), values
    return [m["content"] for m in values["messages"]]


async def test_create_get_conflict_do_nothing(agent: Running) -> None:
    threads = agent.client.threads
    created = await threads.create(metadata={"topic": "x"})
    assert uuid.UUID(created["thread_id"])
    assert created["metadata"] == {"topic": "x"}
    assert created["status"] == "idle"
    assert created["values"] is None
    assert created["interrupts"] == {}
    fetched = await threads.get(created["thread_id"])
    assert fetched["thread_id"] == created["thread_id"]
    assert fetched["metadata"] == {"topic": "x"}

    chosen = str(uuid.uuid4())
    assert (await threads.create(thread_id=chosen))["thread_id"] == chosen
    with pytest.raises(ConflictError) as conflict:
        await threads.create(thread_id=chosen)
    assert "already exists" in error_detail(conflict)
    same = await threads.create(thread_id=chosen, if_exists="do_nothing", metadata={"n": 1})
    assert same["thread_id"] == chosen
    assert same["metadata"] == {}  # untouched

    with pytest.raises(UnprocessableEntityError) as bad:
        await threads.create(thread_id="thread-one")
    assert "not a UUID" in error_detail(bad)
    with pytest.raises(NotFoundError):
        await threads.get(str(uuid.uuid4()))
    with pytest.raises(UnprocessableEntityError):
        await threads.get("nope")


async def test_values_after_a_run(agent: Running) -> None:
    thread_id = await ran(agent, "hello")
    thread = await agent.client.threads.get(thread_id)
    assert thread["status"] == "idle"
    assert contents(thread["values"]) == ["hello", "scripted reply to: hello"]


async def test_create_with_supersteps(agent: Running) -> None:
    created = await agent.client.threads.create(
        supersteps=[
            {
                "updates": [
                    {"values": {"messages": [{"role": "user", "content": "a"}]}, "as_node": "model"}
                ]
            },
            {
                "updates": [
                    {"values": {"messages": [{"role": "ai", "content": "b"}]}, "as_node": "model"}
                ]
            },
        ]
    )
    assert contents(created["values"]) == ["a", "b"]
    history = await agent.client.threads.get_history(created["thread_id"])
    assert len(history) >= 2


async def test_patch_merges_metadata(agent: Running) -> None:
    threads = agent.client.threads
    created = await threads.create(metadata={"a": 1, "b": 1})
    patched = await threads.update(created["thread_id"], metadata={"b": 2, "c": 3})
    assert patched["metadata"] == {"a": 1, "b": 2, "c": 3}
    assert patched["updated_at"] >= created["updated_at"]
    minimal: object = await threads.update(  # type: ignore[func-returns-value]
        created["thread_id"], metadata={"d": 4}, return_minimal=True
    )  # typed as returning nothing: the point is that the server answers nothing
    assert minimal is None
    updated: Any = await threads.get(created["thread_id"])
    assert updated["metadata"]["d"] == 4
    with pytest.raises(NotFoundError):
        await threads.update(str(uuid.uuid4()), metadata={"x": 1})


async def test_search_count_and_pagination(agent: Running, http: httpx.AsyncClient) -> None:
    threads = agent.client.threads
    made = [await threads.create(metadata={"group": "g", "i": i}) for i in range(3)]
    await threads.create(metadata={"group": "other"})
    answered = await ran(agent, "find me", group="answered")

    assert await threads.count() == 5
    assert await threads.count(metadata={"group": "g"}) == 3
    assert await threads.count(status="busy") == 0
    found = await threads.search(metadata={"group": "g"}, sort_by="created_at", sort_order="asc")
    assert [t["thread_id"] for t in found] == [t["thread_id"] for t in made]
    ids = [made[0]["thread_id"], answered]
    assert {t["thread_id"] for t in await threads.search(ids=ids)} == set(ids)

    with_values = await threads.search(metadata={"group": "answered"})
    assert contents(with_values[0]["values"])[0] == "find me"
    slim = await threads.search(metadata={"group": "answered"}, select=["thread_id", "status"])
    assert [dict(t) for t in slim] == [{"thread_id": answered, "status": "idle"}]

    answered_values: Any = with_values[0]["values"]
    by_values = await threads.search(values={"messages": answered_values["messages"]})
    assert [t["thread_id"] for t in by_values] == [answered]
    assert await threads.search(values={"messages": []}) == []
    assert await threads.count(values={"messages": []}) == 0

    raw = await http.post("/threads/search", json={"metadata": {"group": "g"}, "limit": 2})
    assert raw.headers["X-Pagination-Total"] == "3"
    assert raw.headers["X-Pagination-Next"] == "2"
    assert len(raw.json()) == 2


async def test_a_run_names_its_graph_and_assistant_in_the_thread(agent: Running) -> None:
    threads, graph = agent.client.threads, agent.server.deployment
    thread = await threads.create(metadata={"topic": "x"})
    await agent.client.runs.wait(thread["thread_id"], "demo", input=user("hi"))
    labels = {"graph_id": "demo", "assistant_id": graph.assistant_id}
    assert (await threads.get(thread["thread_id"]))["metadata"] == {"topic": "x", **labels}
    # How agent-chat-ui lists its history.
    for wanted in ({"graph_id": "demo"}, {"assistant_id": graph.assistant_id}):
        assert [t["thread_id"] for t in await threads.search(metadata=wanted)] == [
            thread["thread_id"]
        ]
    # A thread the run creates has the run's metadata and the names at once.
    created = str(uuid.uuid4())
    await agent.client.runs.create(
        created, "demo", input=user("later"), if_not_exists="create", after_seconds=60,
        metadata={"source": "cron"},
    )  # fmt: skip
    assert (await threads.get(created))["metadata"] == {"source": "cron", **labels}
    # A run of another assistant renames it.
    other = await agent.client.assistants.create("demo", name="other")
    await agent.client.runs.wait(thread["thread_id"], other["assistant_id"], input=user("again"))
    metadata: Any = (await threads.get(thread["thread_id"]))["metadata"]
    assert metadata["assistant_id"] == other["assistant_id"]


async def test_search_extracts_values_by_path(agent: Running, http: httpx.AsyncClient) -> None:
    answered = await ran(agent, "extract me", topic="t")
    await agent.client.threads.create(metadata={"topic": "t"})  # no values yet
    found = await agent.client.threads.search(
        metadata={"topic": "t"},
        select=["thread_id"],
        sort_by="created_at",
        sort_order="asc",
        extract={
            "last": "values.messages[-1].content",
            "first_kind": "values.messages[0].type",
            "topic": "metadata.topic",
            "nowhere": "values.messages[99].content",
            "graph": "metadata.graph_id",
        },
    )
    assert dict(found[0]) == {
        "thread_id": answered,
        "extracted": {
            "last": "scripted reply to: extract me",
            "first_kind": "human",
            "topic": "t",
            "nowhere": None,
            "graph": "demo",
        },
    }
    assert found[1]["extracted"]["last"] is None
    assert found[1]["extracted"]["topic"] == "t"
    # Without `extract` nothing changes; `select` alone still selects.
    plain = await agent.client.threads.search(metadata={"topic": "t"}, select=["thread_id"])
    assert all(set(t) == {"thread_id"} for t in plain)
    for extract, detail in (
        ({f"a{i}": "metadata.x" for i in range(11)}, "at most 10 paths"),
        ({"values": "metadata.x"}, "cannot name an extracted value"),
        ({"bad-alias": "metadata.x"}, "cannot name an extracted value"),
        ({"a": "state.x"}, "is not a path"),
        ({"a": "values.messages[last]"}, "is not a path"),
    ):
        response = await http.post("/threads/search", json={"extract": extract})
        assert response.status_code == 422, extract
        assert detail in response.json()["detail"]


async def test_delete_removes_thread_runs_and_state(agent: Running) -> None:
    thread_id = await ran(agent)
    runs = await agent.client.runs.list(thread_id)
    assert len(runs) == 1
    await agent.client.threads.delete(thread_id)
    with pytest.raises(NotFoundError):
        await agent.client.threads.get(thread_id)
    with pytest.raises(NotFoundError):
        await agent.client.runs.get(thread_id, runs[0]["run_id"])
    state = await agent.server.deployment.runtime.graph.aget_state(
        {"configurable": {"thread_id": thread_id}}
    )
    assert state.values == {}  # the checkpoints are gone
    with pytest.raises(NotFoundError):
        await agent.client.threads.delete(thread_id)


async def test_delete_cancels_a_running_run(agent: Running) -> None:
    thread = await agent.client.threads.create()
    thread_id = thread["thread_id"]
    run = await agent.client.runs.create(thread_id, "demo", input=user("@sleep 30 @say slow"))
    for _ in range(200):
        if agent.server.engine.is_executing(run["run_id"]):
            break
        await asyncio.sleep(0.01)
    await agent.client.threads.delete(thread_id)
    assert not agent.server.engine.is_executing(run["run_id"])
    with pytest.raises(NotFoundError):
        await agent.client.threads.get(thread_id)
    assert await agent.server.storage.runs.get(run["run_id"]) is None


async def test_copy(agent: Running) -> None:
    source = await ran(agent, "copy me", origin="source")
    # The SDK types `copy` as answering nothing; the server answers the new thread.
    copy: Any = await agent.client.threads.copy(source)  # type: ignore[func-returns-value]
    assert copy["thread_id"] != source
    assert copy["metadata"] == (await agent.client.threads.get(source))["metadata"]
    assert copy["metadata"]["origin"] == "source"
    assert contents(copy["values"]) == ["copy me", "scripted reply to: copy me"]
    # The copy goes on by itself.
    await agent.client.runs.wait(copy["thread_id"], "demo", input=user("again"))
    assert len(contents((await agent.client.threads.get(copy["thread_id"]))["values"])) == 4
    assert len(contents((await agent.client.threads.get(source))["values"])) == 2
    with pytest.raises(NotFoundError):
        await agent.client.threads.copy(str(uuid.uuid4()))


async def test_prune(agent: Running) -> None:
    doomed = await ran(agent, "one")
    kept = await ran(agent, "two")
    before = await agent.client.threads.get_history(kept, limit=100)
    assert len(before) > 1
    result = await agent.client.threads.prune([kept], strategy="keep_latest")
    assert result == {"pruned_count": 1}
    after = await agent.client.threads.get_history(kept, limit=100)
    assert len(after) == 1
    assert after[0]["checkpoint"] == before[0]["checkpoint"]
    assert contents((await agent.client.threads.get(kept))["values"]) == [
        "two", "scripted reply to: two",
    ]  # fmt: skip
    await agent.client.runs.wait(kept, "demo", input=user("three"))  # and it goes on
    assert contents((await agent.client.threads.get(kept))["values"]) == [
        "two", "scripted reply to: two", "three", "scripted reply to: three",
    ]  # fmt: skip

    result = await agent.client.threads.prune([doomed, str(uuid.uuid4())])
    assert result == {"pruned_count": 1}
    with pytest.raises(NotFoundError):
        await agent.client.threads.get(doomed)


async def test_state_latest_and_at_checkpoint(agent: Running) -> None:
    thread_id = await ran(agent, "state?")
    state: Any = await agent.client.threads.get_state(thread_id)
    assert set(state) >= {
        "values", "next", "tasks", "checkpoint", "metadata", "created_at",
        "parent_checkpoint", "interrupts",
    }  # fmt: skip
    assert contents(state["values"]) == ["state?", "scripted reply to: state?"]
    assert state["next"] == []
    assert state["tasks"] == []
    assert state["interrupts"] == []
    checkpoint = state["checkpoint"]
    assert checkpoint["thread_id"] == thread_id
    assert checkpoint["checkpoint_ns"] == ""
    assert checkpoint["checkpoint_id"]
    assert state["parent_checkpoint"]["checkpoint_id"] != checkpoint["checkpoint_id"]
    assert state["metadata"]["step"] >= 1

    parent_id = state["parent_checkpoint"]["checkpoint_id"]
    by_id = await agent.client.threads.get_state(thread_id, checkpoint_id=parent_id)
    assert by_id["checkpoint"]["checkpoint_id"] == parent_id
    # The SDK's Checkpoint wants every key; the API takes the two that name a checkpoint.
    by_ref = await agent.client.threads.get_state(
        thread_id,
        checkpoint={"checkpoint_id": parent_id, "checkpoint_ns": ""},  # type: ignore[arg-type]
    )
    assert by_ref["checkpoint"] == by_id["checkpoint"]
    assert by_ref["values"] == by_id["values"]
    only = await agent.client.threads.get_state(thread_id, select=["values.messages", "next"])
    assert set(only) == {"values", "next"}
    assert set(only["values"]) == {"messages"}

    with pytest.raises(NotFoundError) as missing:
        await agent.client.threads.get_state(thread_id, checkpoint_id=str(uuid.uuid4()))
    assert "checkpoint" in error_detail(missing)


async def test_state_of_a_new_thread(agent: Running) -> None:
    thread = await agent.client.threads.create()
    state = await agent.client.threads.get_state(thread["thread_id"])
    assert state["values"] == {}
    assert state["checkpoint"]["thread_id"] == thread["thread_id"]
    assert state["checkpoint"]["checkpoint_id"] is None
    assert state["parent_checkpoint"] is None
    assert await agent.client.threads.get_history(thread["thread_id"]) == []


async def test_update_state(agent: Running) -> None:
    thread = await agent.client.threads.create()
    thread_id = thread["thread_id"]
    response = await agent.client.threads.update_state(
        thread_id, {"messages": [{"role": "user", "content": "planted"}]}
    )
    assert response["checkpoint"]["thread_id"] == thread_id
    assert response["checkpoint"]["checkpoint_id"]
    state = await agent.client.threads.get_state(thread_id)
    assert contents(state["values"]) == ["planted"]
    assert state["checkpoint"] == response["checkpoint"]
    assert contents((await agent.client.threads.get(thread_id))["values"]) == ["planted"]

    again = await agent.client.threads.update_state(
        thread_id, {"messages": [{"role": "ai", "content": "reply"}]}, as_node="model"
    )
    assert again["checkpoint"]["checkpoint_id"] != response["checkpoint"]["checkpoint_id"]
    # Update from an older checkpoint: a fork that drops the later message.
    forked = await agent.client.threads.update_state(
        thread_id,
        {"messages": [{"role": "ai", "content": "other"}]},
        as_node="model",
        checkpoint_id=response["checkpoint"]["checkpoint_id"],
    )
    assert contents((await agent.client.threads.get_state(thread_id))["values"]) == [
        "planted", "other",
    ]  # fmt: skip
    assert forked["checkpoint"]["checkpoint_id"] != again["checkpoint"]["checkpoint_id"]

    with pytest.raises(UnprocessableEntityError) as bad_node:
        await agent.client.threads.update_state(thread_id, {"messages": []}, as_node="nowhere")
    assert "nowhere" in error_detail(bad_node)
    with pytest.raises(NotFoundError):
        await agent.client.threads.update_state(str(uuid.uuid4()), {"messages": []})

    events = await agent.server.storage.events.read(thread_id, after=None)
    assert [e.event for e in events].count("state_update") == 3
    # The thread stream's `state_update` mode carries them.
    stream = await agent.client.threads.join_stream(
        thread_id, stream_mode="state_update", last_event_id="-"
    )
    try:
        async with asyncio.timeout(10):
            first = await anext(p async for p in stream if p.event == "state_update")
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    assert first.data["checkpoint"] == response["checkpoint"]
    assert first.data["values"] == {"messages": [{"role": "user", "content": "planted"}]}


async def test_history(agent: Running, http: httpx.AsyncClient) -> None:
    thread_id = await ran(agent, "first")
    await agent.client.runs.wait(thread_id, "demo", input=user("second"))
    history: list[Any] = await agent.client.threads.get_history(thread_id, limit=100)
    assert len(history) > 2
    ids = [h["checkpoint"]["checkpoint_id"] for h in history]
    assert ids == sorted(ids, reverse=True)  # newest first
    assert contents(history[0]["values"])[-1] == "scripted reply to: second"
    latest = await agent.client.threads.get_state(thread_id)
    assert history[0]["checkpoint"] == latest["checkpoint"]
    assert history[-1]["parent_checkpoint"] is None

    two = await agent.client.threads.get_history(thread_id, limit=2)
    assert [h["checkpoint"]["checkpoint_id"] for h in two] == ids[:2]
    older = await agent.client.threads.get_history(thread_id, limit=2, before=ids[1])
    assert [h["checkpoint"]["checkpoint_id"] for h in older] == ids[2:4]
    older_ref = await agent.client.threads.get_history(
        thread_id, limit=2, before=history[1]["checkpoint"]
    )
    assert older_ref == older
    step = history[0]["metadata"]["step"]
    filtered = await agent.client.threads.get_history(thread_id, metadata={"step": step})
    assert [h["checkpoint"]["checkpoint_id"] for h in filtered] == ids[:1]

    got = await http.get(f"/threads/{thread_id}/history", params={"limit": 3})
    assert [h["checkpoint"]["checkpoint_id"] for h in got.json()] == ids[:3]
    got = await http.get(f"/threads/{thread_id}/history", params={"limit": 1, "before": ids[0]})
    assert [h["checkpoint"]["checkpoint_id"] for h in got.json()] == ids[1:2]
    assert (await http.get(f"/threads/{thread_id}/history?limit=0")).status_code == 422


async def test_history_maps_a_subagents_tool_call_to_its_namespace(gated: Running) -> None:
    """A task's `path` (`["__pregel_push", i, …]`: the i-th tool call of the step) and its
    result's tool message name the subagent's namespace (`tools:<task id>`), whose history
    holds the subagent's own conversation (what the JS SDK's `useStream` rebuilds a
    subagent's card from after a reload)."""
    thread_id = str(uuid.uuid4())
    delegate = '@call task {"description": "say hi", "subagent_type": "helper"}\n@say done'
    await gated.client.runs.wait(thread_id, "gated", input=user(delegate), if_not_exists="create")
    history: list[Any] = await gated.client.threads.get_history(thread_id, limit=20)
    tasks = [task for state in history for task in state["tasks"]]
    assert all(isinstance(task["path"], list) and task["path"] for task in tasks)
    [pushed] = [task for task in tasks if task["path"][0] == "__pregel_push"]
    assert pushed["path"][1] == 0
    [call] = [m for m in pushed["result"]["messages"] if m["type"] == "tool"]
    namespace = f"{pushed['name']}:{pushed['id']}"
    [sub] = await gated.client.threads.get_history(
        thread_id,
        limit=1,
        checkpoint={"checkpoint_ns": namespace},  # type: ignore[arg-type]
    )
    assert contents(sub["values"]) == ["say hi", "scripted reply to: say hi"]
    assert call["content"] == "scripted reply to: say hi"


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "detail"),
    [
        ("POST", "/threads", b"{nope", 422, "not valid JSON"),
        ("POST", "/threads", b'{"metadata": "tags"}', 422, "metadata"),
        ("POST", "/threads", b'{"if_exists": "sometimes"}', 422, "if_exists"),
        ("POST", "/threads/search", b'{"status": "sleeping"}', 422, "status"),
        ("POST", "/threads/search", b'{"offset": -1}', 422, "offset"),
        ("POST", "/threads/prune", b'{"thread_ids": ["x"]}', 422, "not a UUID"),
        ("POST", "/threads/prune", b'{"thread_ids": [], "strategy": "all"}', 422, "strategy"),
        ("PATCH", "/threads/not-a-uuid", b"{}", 422, "not a UUID"),
        ("DELETE", f"/threads/{UNKNOWN_ID}", b"", 404, "not found"),
        ("POST", f"/threads/{UNKNOWN_ID}/copy", b"", 404, "not found"),
        ("GET", f"/threads/{UNKNOWN_ID}/state", b"", 404, "not found"),
        ("GET", f"/threads/{UNKNOWN_ID}/history", b"", 404, "not found"),
        ("POST", f"/threads/{UNKNOWN_ID}/state", b'{"values": 3}', 422, "values"),
        ("POST", f"/threads/{UNKNOWN_ID}/state/checkpoint", b"{}", 422, "checkpoint"),
        ("POST", f"/threads/{UNKNOWN_ID}/history", b'{"limit": "x"}', 422, "limit"),
    ],
)
async def test_malformed_requests(
    http: httpx.AsyncClient, method: str, path: str, body: bytes, status: int, detail: str
) -> None:
    await assert_json_error(http, method, path, body, status, detail)
    ok = await http.post("/threads", json={"metadata": {"a": 1}, "unknown_field": True})
    assert ok.status_code == 200
