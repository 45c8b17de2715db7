"""Streaming runs through the official langgraph-sdk client."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk.schema import StreamMode

from tests.server.conftest import Running, call, user


async def test_stream_values_starts_with_metadata_and_ends_with_the_answer(agent: Running) -> None:
    thread = {"thread_id": str(uuid.uuid4())}
    parts = [
        part
        async for part in agent.client.runs.stream(
            thread["thread_id"],
            "demo",
            input=user("hello"),
            stream_mode="values",
            if_not_exists="create",
        )
    ]
    assert parts[0].event == "metadata"
    assert parts[0].data["attempt"] == 1
    assert {p.event for p in parts[1:-1]} == {"values"}
    assert parts[-2].data["messages"][-1]["content"] == "scripted reply to: hello"
    # The terminal `end` event tells the client the run is over (the SDK then does not
    # ask for the run's status).
    run_id = parts[0].data["run_id"]
    assert (parts[-1].event, parts[-1].data) == ("end", {"run_id": run_id, "status": "success"})
    assert all(p.id for p in parts)
    run = await agent.client.runs.get(thread["thread_id"], run_id)
    assert run["status"] == "success"


async def test_list_of_modes_and_messages_tuple(agent: Running) -> None:
    thread = {"thread_id": str(uuid.uuid4())}
    parts = [
        part
        async for part in agent.client.runs.stream(
            thread["thread_id"],
            "demo",
            input=user(call("add", a=2, b=3) + "\n@say sum is {last_tool_result}"),
            stream_mode=["updates", "messages-tuple"],
            if_not_exists="create",
        )
    ]
    events = {p.event for p in parts}
    assert events == {"metadata", "updates", "messages", "end"}
    chunk, metadata = next(p.data for p in parts if p.event == "messages")
    assert "content" in chunk
    assert isinstance(metadata, dict)
    streamed = "".join(
        str(p.data[0]["content"])
        for p in parts
        if p.event == "messages" and p.data[0]["type"] == "AIMessageChunk"
    )
    assert "sum is 5" in streamed


@pytest.mark.parametrize("mode", ["debug", "tasks", "checkpoints", "events", "messages"])
async def test_every_stream_mode_names_its_events(agent: Running, mode: StreamMode) -> None:
    parts = [
        part
        async for part in agent.client.runs.stream(
            None, "demo", input=user("modes"), stream_mode=[mode, "values"]
        )
    ]
    names = {p.event.split("/")[0] for p in parts}
    assert names == {"metadata", mode, "values", "end"}, names
    last_values = [p.data for p in parts if p.event == "values"][-1]
    assert last_values["messages"][-1]["content"] == "scripted reply to: modes"


async def test_durability_exit_still_persists_the_result(agent: Running) -> None:
    thread_id = str(uuid.uuid4())
    values: Any = await agent.client.runs.wait(
        thread_id, "demo", input=user("durable"), durability="exit", if_not_exists="create"
    )
    assert values["messages"][-1]["content"] == "scripted reply to: durable"
    state = await agent.server.deployment.runtime.graph.aget_state(
        {"configurable": {"thread_id": thread_id}}
    )
    assert state.values["messages"][-1].content == "scripted reply to: durable"


async def test_disconnect_with_on_disconnect_cancel_stops_the_run(agent: Running) -> None:
    thread_id = str(uuid.uuid4())
    stream = agent.client.runs.stream(
        thread_id, "demo", input=user("@sleep 5 @say never"), if_not_exists="create",
        on_disconnect="cancel",
    )  # fmt: skip
    first = await stream.__anext__()
    await stream.aclose()  # type: ignore[attr-defined]  # an async generator, typed as an iterator
    run_id = first.data["run_id"]
    for _ in range(200):
        run = await agent.client.runs.get(thread_id, run_id)
        if run["status"] == "interrupted":
            break
        await asyncio.sleep(0.02)
    assert run["status"] == "interrupted"


async def test_batch_and_bulk_cancel(agent: Running) -> None:
    runs = await agent.client.runs.create_batch(
        # RunCreate lists every key as required; the API needs only the assistant.
        [{"assistant_id": "demo", "input": user(f"batch {i}")} for i in range(3)]  # type: ignore[typeddict-item]
    )
    assert len(runs) == 3
    thread_id = str(uuid.uuid4())
    slow = await agent.client.runs.create(
        thread_id, "demo", input=user("@sleep 5 @say never"), if_not_exists="create"
    )
    await agent.client.runs.cancel_many(thread_id=thread_id)
    for _ in range(200):
        run = await agent.client.runs.get(thread_id, slow["run_id"])
        if run["status"] == "interrupted":
            break
        await asyncio.sleep(0.02)
    assert run["status"] == "interrupted"


def sse_events(text: str) -> list[str]:
    return [line[len("event: ") :] for line in text.splitlines() if line.startswith("event: ")]


async def test_join_stream_takes_modes_as_a_json_list_or_repeated(agent: Running) -> None:
    thread_id = str(uuid.uuid4())
    run = await agent.client.runs.create(
        thread_id, "demo", input=user("hi"), if_not_exists="create",
        stream_mode=["values", "updates", "messages-tuple"],
    )  # fmt: skip
    await agent.client.runs.join(thread_id, run["run_id"])
    path = f"/threads/{thread_id}/runs/{run['run_id']}/stream"
    async with httpx.AsyncClient(base_url=agent.url) as http:
        for query, modes in (
            ('stream_mode=["updates"]', {"updates"}),  # as the JS SDK's joinStream sends it
            ('stream_mode=["values","updates"]', {"values", "updates"}),
            ("stream_mode=values&stream_mode=updates", {"values", "updates"}),
            ("stream_mode=updates", {"updates"}),
            ("stream_mode=", {"values", "updates", "messages"}),  # none: every event
        ):
            events = sse_events((await http.get(f"{path}?{query}")).text)
            assert set(events) == {"metadata", "end", *modes}, query
        for query, detail in (
            ('stream_mode=["updates"', "is not a JSON list of stream modes"),
            ("stream_mode=[1]", "is not a JSON list of stream modes"),
            ('stream_mode=["everything"]', "unknown stream mode 'everything'"),
        ):
            response = await http.get(f"{path}?{query}")
            assert response.status_code == 422, query
            assert detail in response.json()["detail"]
    parts = [p async for p in agent.client.runs.join_stream(thread_id, run["run_id"],
                                                             stream_mode=["updates"])]  # fmt: skip
    assert {p.event for p in parts} == {"metadata", "updates", "end"}


async def test_thread_stream_takes_modes_as_a_json_list(agent: Running) -> None:
    thread_id = str(uuid.uuid4())
    await agent.client.runs.wait(thread_id, "demo", input=user("one"), if_not_exists="create")
    async with (
        httpx.AsyncClient(base_url=agent.url, timeout=10) as http,
        http.stream(
            "GET",
            f'/threads/{thread_id}/stream?stream_mode=["lifecycle"]',
            headers={"Last-Event-ID": "-"},
        ) as response,
    ):
        assert response.status_code == 200
        events = []
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                events.append(line[len("event: ") :])
            if '"run_done"' in line:
                break
    assert events == ["metadata", "metadata"]  # the run's start and its end, nothing else


async def test_a_run_on_a_long_thread_reads_the_log_from_where_it_began(
    agent: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream of a new run, and a join replaying it from its start, read the thread's
    event log from where it stood when the run was created: not the earlier runs' events."""
    thread_id = (await agent.client.threads.create())["thread_id"]
    events = agent.server.storage.events
    for i in range(3000):  # what earlier runs left in the thread's log
        await events.append(thread_id, f"earlier-{i // 30}", "values", b'{"messages": []}')
    read: list[tuple[str | None, int]] = []  # (after, events read) of each page
    page = events.page

    async def recorded(thread: str, *, after: str | None, limit: int, max_bytes: int) -> Any:
        got = await page(thread, after=after, limit=limit, max_bytes=max_bytes)
        read.append((after, len(got)))
        return got

    monkeypatch.setattr(events, "page", recorded)
    parts = [
        part
        async for part in agent.client.runs.stream(
            thread_id, "demo", input=user("hello"), stream_mode="updates"
        )
    ]
    run_id = parts[0].data["run_id"]
    joined = [p async for p in agent.client.runs.join_stream(thread_id, run_id, last_event_id="-")]
    assert [(p.event, p.id) for p in joined] == [(p.event, p.id) for p in parts]
    assert None not in [after for after, _ in read]  # never from the thread's first event
    assert sum(count for _, count in read) <= 2 * len(parts)  # each stream: the run alone
    run: dict[str, Any] = dict(await agent.client.runs.get(thread_id, run_id))
    assert "log_start" not in run["kwargs"]  # the server's own, not the API's
