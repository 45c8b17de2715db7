"""Assistants through the official SDK: create, search, count, versions, graph, schemas."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from agentctl.engine import assistant_uuid
from tests.server.conftest import UNKNOWN_ID, Running, assert_json_error, error_detail, user


async def test_the_deployment_assistant_exists_under_its_graph_name(agent: Running) -> None:
    by_name = await agent.client.assistants.get("demo")
    by_id = await agent.client.assistants.get(assistant_uuid("demo"))
    assert by_name == by_id
    assert by_id["assistant_id"] == assistant_uuid("demo")
    assert by_id["graph_id"] == "demo"
    assert by_id["version"] == 1
    assert by_id["metadata"] == {"created_by": "system"}


async def test_create_get_conflict_and_do_nothing(agent: Running) -> None:
    client = agent.client.assistants
    created = await client.create(
        "demo",
        config={"configurable": {"tone": "dry"}},
        context={"k": 1},
        metadata={"team": "a"},
        name="dry",
        description="a dry one",
    )
    assert uuid.UUID(created["assistant_id"])
    assert created["name"] == "dry"
    assert created["description"] == "a dry one"
    assert created["config"] == {"configurable": {"tone": "dry"}}
    assert created["context"] == {"k": 1}
    assert created["version"] == 1
    assert await client.get(created["assistant_id"]) == created

    with pytest.raises(ConflictError) as conflict:
        await client.create("demo", assistant_id=created["assistant_id"])
    assert "already exists" in str(conflict.value.body)
    same = await client.create(
        "demo", assistant_id=created["assistant_id"], if_exists="do_nothing", name="other"
    )
    assert same == created

    chosen = str(uuid.uuid4())
    mine = await client.create("demo", assistant_id=chosen)
    assert mine["assistant_id"] == chosen
    assert mine["name"] == "Untitled"


async def test_create_refuses_another_graph_and_bad_ids(agent: Running) -> None:
    with pytest.raises(UnprocessableEntityError) as other:
        await agent.client.assistants.create("some-other-graph")
    assert "serves graph 'demo'" in error_detail(other)
    with pytest.raises(UnprocessableEntityError) as bad:
        await agent.client.assistants.create("demo", assistant_id="not-a-uuid")
    assert "not a UUID" in error_detail(bad)
    with pytest.raises(NotFoundError) as missing:
        await agent.client.assistants.get(str(uuid.uuid4()))
    assert "serves the agent 'demo'" in error_detail(missing)


async def test_search_count_pagination_and_select(agent: Running, http: httpx.AsyncClient) -> None:
    client = agent.client.assistants
    for i in range(3):
        await client.create("demo", name=f"helper-{i}", metadata={"kind": "helper", "i": i})
    assert await client.count() == 4
    assert await client.count(metadata={"kind": "helper"}) == 3
    assert await client.count(name="HELPER") == 3  # case-insensitive substring
    assert await client.count(graph_id="nope") == 0

    found = await client.search(metadata={"kind": "helper"}, sort_by="name", sort_order="asc")
    assert [a["name"] for a in found] == ["helper-0", "helper-1", "helper-2"]
    page = await client.search(
        metadata={"kind": "helper"}, limit=2, sort_by="name", sort_order="asc",
        response_format="object",
    )  # fmt: skip
    assert [a["name"] for a in page["assistants"]] == ["helper-0", "helper-1"]
    assert page["next"] == "2"
    slim = await client.search(metadata={"i": 1}, select=["assistant_id", "name"])
    assert len(slim) == 1
    assert set(slim[0]) == {"assistant_id", "name"}

    raw = await http.post("/assistants/search", json={"limit": 2, "offset": 2})
    assert raw.headers["X-Pagination-Total"] == "4"
    assert "X-Pagination-Next" not in raw.headers
    assert len(raw.json()) == 2


async def test_patch_makes_versions_and_latest_switches_back(agent: Running) -> None:
    client = agent.client.assistants
    created = await client.create("demo", name="v", metadata={"a": 1}, config={"tags": ["x"]})
    aid = created["assistant_id"]
    patched = await client.update(aid, name="v2", metadata={"b": 2}, context={"c": 3})
    assert patched["version"] == 2
    assert patched["name"] == "v2"
    assert patched["metadata"] == {"a": 1, "b": 2}  # merged
    assert patched["config"] == {"tags": ["x"]}  # kept
    assert patched["context"] == {"c": 3}
    assert patched["created_at"] == created["created_at"]

    versions = await client.get_versions(aid)
    assert [v["version"] for v in versions] == [2, 1]
    assert [v["name"] for v in versions] == ["v2", "v"]
    assert [v["version"] for v in await client.get_versions(aid, metadata={"b": 2})] == [2]
    assert [v["version"] for v in await client.get_versions(aid, limit=1, offset=1)] == [1]

    back = await client.set_latest(aid, 1)
    assert back["version"] == 1
    assert back["name"] == "v"
    assert (await client.get(aid))["name"] == "v"
    again = await client.update(aid, name="v3")
    assert again["version"] == 3  # a new version after the highest, not after the latest

    with pytest.raises(NotFoundError) as missing:
        await client.set_latest(aid, 9)
    assert "no version 9" in error_detail(missing)
    with pytest.raises(UnprocessableEntityError):
        await client.update(aid, graph_id="elsewhere")


async def test_delete_and_the_default_is_protected(agent: Running) -> None:
    client = agent.client.assistants
    created = await client.create("demo")
    await client.delete(created["assistant_id"])
    with pytest.raises(NotFoundError):
        await client.get(created["assistant_id"])
    with pytest.raises(NotFoundError):
        await client.delete(created["assistant_id"])
    with pytest.raises(ConflictError) as refused:
        await client.delete("demo")
    assert "cannot be deleted" in error_detail(refused)
    assert (await client.get("demo"))["graph_id"] == "demo"


async def test_delete_with_threads(agent: Running) -> None:
    created = await agent.client.assistants.create("demo")
    aid = created["assistant_id"]
    # The threads its runs named (as agent-chat-ui finds them), and one set by hand.
    ran = await agent.client.threads.create()
    await agent.client.runs.wait(ran["thread_id"], aid, input=user("hi"))
    labelled = await agent.client.threads.create(metadata={"assistant_id": aid})
    other = await agent.client.threads.create(metadata={"assistant_id": "someone-else"})
    by_default = await agent.client.threads.create()
    await agent.client.runs.wait(by_default["thread_id"], "demo", input=user("hi"))
    await agent.client.assistants.delete(aid, delete_threads=True)
    for gone in (ran, labelled):
        with pytest.raises(NotFoundError):
            await agent.client.threads.get(gone["thread_id"])
    for kept in (other, by_default):
        assert (await agent.client.threads.get(kept["thread_id"]))["thread_id"] == kept["thread_id"]


async def test_delete_cancels_the_assistants_runs_in_flight(agent: Running) -> None:
    created = await agent.client.assistants.create("demo")
    aid = created["assistant_id"]
    thread = await agent.client.threads.create()
    tid = thread["thread_id"]
    running = await agent.client.runs.create(tid, aid, input=user("@sleep 30 @say never"))
    queued = await agent.client.runs.create(tid, aid, input=user("next"))
    for _ in range(200):
        if (await agent.client.runs.get(tid, running["run_id"]))["status"] == "running":
            break
        await asyncio.sleep(0.02)
    await agent.client.assistants.delete(aid)
    for run in (running, queued):
        assert (await agent.client.runs.get(tid, run["run_id"]))["status"] == "interrupted"
    # The thread is free again for others' runs.
    values: Any = await agent.client.runs.wait(tid, "demo", input=user("after"))
    assert values["messages"][-1]["content"] == "scripted reply to: after"


async def test_graph_drawing(agent: Running, http: httpx.AsyncClient) -> None:
    graph = await agent.client.assistants.get_graph("demo")
    ids = {node["id"] for node in graph["nodes"]}
    assert {"__start__", "model", "tools"} <= ids
    assert any(e["source"] == "__start__" for e in graph["edges"])
    xray = await agent.client.assistants.get_graph(assistant_uuid("demo"), xray=True)
    assert {"model", "tools"} <= {node["id"] for node in xray["nodes"]}
    assert (await http.get("/assistants/demo/graph", params={"xray": "2"})).status_code == 200
    bad = await http.get("/assistants/demo/graph", params={"xray": "deep"})
    assert bad.status_code == 422
    assert "xray" in bad.json()["detail"]


async def test_schemas_and_subgraphs(agent: Running) -> None:
    schemas: Any = await agent.client.assistants.get_schemas("demo")
    assert schemas["graph_id"] == "demo"
    assert set(schemas) == {
        "graph_id", "input_schema", "output_schema", "state_schema", "config_schema",
        "context_schema",
    }  # fmt: skip
    assert "messages" in schemas["input_schema"]["properties"]
    assert "messages" in schemas["output_schema"]["properties"]
    assert "messages" in schemas["state_schema"]["properties"]
    assert schemas["config_schema"]["type"] == "object"
    assert schemas["context_schema"] is None  # the demo agent has no context schema
    # Subagents run through the `task` tool, not as nested graphs.
    assert await agent.client.assistants.get_subgraphs("demo") == {}
    assert await agent.client.assistants.get_subgraphs("demo", namespace="x", recurse=True) == {}
    with pytest.raises(NotFoundError):
        await agent.client.assistants.get_schemas(str(uuid.uuid4()))


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "detail"),
    [
        ("POST", "/assistants", b"{oops", 422, "not valid JSON"),
        ("POST", "/assistants", b"{}", 422, "graph_id"),
        ("POST", "/assistants", b'{"graph_id": "demo", "metadata": [1]}', 422, "metadata"),
        ("POST", "/assistants", b'{"graph_id": "demo", "if_exists": "maybe"}', 422, "if_exists"),
        ("POST", "/assistants/search", b'{"limit": "many"}', 422, "limit"),
        ("POST", "/assistants/search", b'{"limit": 0}', 422, "limit"),
        ("POST", "/assistants/search", b'{"sort_by": "colour"}', 422, "sort_by"),
        ("POST", "/assistants/search", b'{"select": ["secret"]}', 422, "select"),
        ("POST", "/assistants/demo/latest", b'{"version": "one"}', 422, "version"),
        ("POST", "/assistants/demo/latest", b'{"version": 2147483648}', 422, "version"),
        ("PATCH", f"/assistants/{UNKNOWN_ID}", b"{}", 404, "not found"),
        ("GET", "/assistants/nobody/schemas", b"", 404, "not found"),
    ],
)
async def test_malformed_requests(
    http: httpx.AsyncClient, method: str, path: str, body: bytes, status: int, detail: str
) -> None:
    await assert_json_error(http, method, path, body, status, detail)
    # Unknown fields are ignored, and the server keeps serving.
    ok = await http.post("/assistants", json={"graph_id": "demo", "flavour": "extra"})
    assert ok.status_code == 200
