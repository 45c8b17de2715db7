"""Streaming runs through the official langgraph-sdk client."""

from __future__ import annotations

import uuid

from tests.server.conftest import Running, call, user


async def test_stream_values_starts_with_metadata_and_ends_with_the_answer(agent: Running) -> None:
    thread = {"thread_id": str(uuid.uuid4())}
    parts = [
        part
        async for part in agent.client.runs.stream(
            thread["thread_id"], "demo", input=user("hello"), stream_mode="values",
            if_not_exists="create",
        )
    ]
    assert parts[0].event == "metadata"
    assert parts[0].data["attempt"] == 1
    assert {p.event for p in parts[1:]} == {"values"}
    assert parts[-1].data["messages"][-1]["content"] == "scripted reply to: hello"
    assert all(p.id for p in parts)
    run = await agent.client.runs.get(thread["thread_id"], parts[0].data["run_id"])
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
    assert events == {"metadata", "updates", "messages"}
    chunk, metadata = next(p.data for p in parts if p.event == "messages")
    assert "content" in chunk
    assert isinstance(metadata, dict)
    streamed = "".join(
        str(p.data[0]["content"]) for p in parts if p.event == "messages" and p.data[0]["type"] == "AIMessageChunk"
    )
    assert "sum is 5" in streamed
