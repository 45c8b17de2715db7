"""The long-term memory store through the official SDK."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from langgraph_sdk.errors import UnprocessableEntityError

from tests.server.conftest import Running, assert_json_error, error_detail


async def test_put_get_overwrite_delete(agent: Running) -> None:
    store = agent.client.store
    await store.put_item(["notes", "alice"], "today", {"text": "buy milk"})
    item = await store.get_item(["notes", "alice"], "today")
    assert item["namespace"] == ["notes", "alice"]
    assert item["key"] == "today"
    assert item["value"] == {"text": "buy milk"}
    assert item["created_at"]
    assert item["updated_at"]

    await asyncio.sleep(1.1)  # stored times have whole seconds: a write again is later
    # Items do not expire here: a time to live is refused, never stored and ignored.
    with pytest.raises(UnprocessableEntityError) as caught:
        await store.put_item(["notes", "alice"], "today", {"text": "buy bread"}, ttl=60)
    assert error_detail(caught).startswith("body ttl: items do not expire")
    await store.put_item(["notes", "alice"], "today", {"text": "buy bread"}, index=False)
    again = await store.get_item(["notes", "alice"], "today", refresh_ttl=True)
    assert again["value"] == {"text": "buy bread"}
    assert again["created_at"] == item["created_at"]  # kept when written again
    assert again["updated_at"] > item["updated_at"]

    await store.delete_item(["notes", "alice"], "today")
    # A missing item is null, as the reference answers: the SDK returns None.
    assert await store.get_item(["notes", "alice"], "today") is None
    await store.delete_item(["notes", "alice"], "today")  # deleting twice is fine


async def test_the_agent_and_the_api_share_the_store(agent: Running) -> None:
    # The revision's shared memory (AGENTS.md) is seeded into the store at load.
    namespaces = (await agent.client.store.list_namespaces(limit=100))["namespaces"]
    assert namespaces
    found = await agent.client.store.search_items(namespaces[0], limit=100)
    assert found["items"]
    assert all(i["namespace"][: len(namespaces[0])] == namespaces[0] for i in found["items"])


async def test_search_filter_and_paging(agent: Running) -> None:
    store = agent.client.store
    for i in range(5):
        await store.put_item(
            ["docs", "team"], f"d{i}", {"n": i, "kind": "even" if i % 2 == 0 else "odd"}
        )
    await store.put_item(["docs", "other"], "x", {"n": 99, "kind": "even"})
    await store.put_item(["documents"], "y", {"n": 100, "kind": "even"})

    every = await store.search_items(["docs"], limit=100)
    assert {i["key"] for i in every["items"]} == {"d0", "d1", "d2", "d3", "d4", "x"}
    team = await store.search_items(["docs", "team"], filter={"kind": "even"}, limit=100)
    assert sorted(i["key"] for i in team["items"]) == ["d0", "d2", "d4"]
    first = await store.search_items(["docs", "team"], limit=2)
    second = await store.search_items(["docs", "team"], limit=2, offset=2)
    assert len(first["items"]) == 2
    assert len(second["items"]) == 2
    assert not {i["key"] for i in first["items"]} & {i["key"] for i in second["items"]}
    # No embedding index: a search by meaning is refused, never answered as if it were one.
    with pytest.raises(UnprocessableEntityError) as caught:
        await store.search_items(["docs", "team"], query="anything", limit=100)
    assert error_detail(caught).startswith("body query: the store has no embedding index")
    with pytest.raises(UnprocessableEntityError) as caught:
        await store.put_item(["docs"], "y", {"text": "t"}, index=["text"])
    assert error_detail(caught).startswith("body index: the store has no embedding index")


async def test_list_namespaces(agent: Running) -> None:
    store = agent.client.store
    await store.put_item(["users", "u1", "prefs"], "k", {"v": 1})
    await store.put_item(["users", "u2", "prefs"], "k", {"v": 1})
    await store.put_item(["users", "u2", "notes"], "k", {"v": 1})
    found = await store.list_namespaces(prefix=["users"])
    assert sorted(found["namespaces"]) == [
        ["users", "u1", "prefs"], ["users", "u2", "notes"], ["users", "u2", "prefs"],
    ]  # fmt: skip
    assert sorted((await store.list_namespaces(prefix=["users"], suffix=["prefs"]))["namespaces"]) == [  # noqa: E501
        ["users", "u1", "prefs"], ["users", "u2", "prefs"],
    ]  # fmt: skip
    shallow = await store.list_namespaces(prefix=["users"], max_depth=2)
    assert sorted(shallow["namespaces"]) == [["users", "u1"], ["users", "u2"]]
    assert len((await store.list_namespaces(prefix=["users"], limit=1))["namespaces"]) == 1
    assert (await store.list_namespaces(prefix=["nobody"]))["namespaces"] == []


async def test_bad_namespaces(agent: Running, http: httpx.AsyncClient) -> None:
    with pytest.raises(UnprocessableEntityError) as empty:
        await agent.client.store.put_item(["a", ""], "k", {"v": 1})
    assert "empty" in error_detail(empty)
    with pytest.raises(UnprocessableEntityError) as none:
        await agent.client.store.put_item([], "k", {"v": 1})
    assert "at least one label" in error_detail(none)
    with pytest.raises(UnprocessableEntityError) as reserved:
        await agent.client.store.put_item(["langgraph"], "k", {"v": 1})
    assert "langgraph" in error_detail(reserved)
    # The SDK refuses dotted labels itself; a raw request gets a 422 from the server.
    dotted = await http.put(
        "/store/items", json={"namespace": ["a.b"], "key": "k", "value": {"v": 1}}
    )
    assert dotted.status_code == 422
    assert "'.'" in dotted.json()["detail"]
    got = await http.get("/store/items", params={"namespace": "a..b", "key": "k"})
    assert got.status_code == 422
    assert "empty" in got.json()["detail"]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "detail"),
    [
        ("PUT", "/store/items", b"{bad", 422, "not valid JSON"),
        ("PUT", "/store/items", b'{"namespace": ["a"], "key": "k"}', 422, "value"),
        ("PUT", "/store/items", b'{"namespace": "a", "key": "k", "value": {}}', 422, "namespace"),
        ("PUT", "/store/items", b'{"namespace": ["a"], "key": "k", "value": [1]}', 422, "value"),
        (
            "PUT",
            "/store/items",
            b'{"namespace": ["a"], "key": "k", "value": {}, "ttl": -1}',
            422,
            "ttl",
        ),
        ("GET", "/store/items?namespace=a", b"", 422, "key"),
        ("DELETE", "/store/items", b'{"namespace": ["a"]}', 422, "key"),
        ("POST", "/store/items/search", b'{"limit": 0}', 422, "limit"),
        ("POST", "/store/items/search", b'{"namespace_prefix": [1]}', 422, "namespace_prefix"),
        ("POST", "/store/namespaces", b'{"max_depth": "deep"}', 422, "max_depth"),
    ],
)
async def test_malformed_requests(
    http: httpx.AsyncClient, method: str, path: str, body: bytes, status: int, detail: str
) -> None:
    await assert_json_error(http, method, path, body, status, detail)
    ok = await http.put(
        "/store/items", json={"namespace": ["ok"], "key": "k", "value": {}, "extra": 1}
    )
    assert ok.status_code == 204
