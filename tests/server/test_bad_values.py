"""Values no store can hold (integers past 64 bits, NUL, odd keys, deep nesting, huge
offsets and delays) are a 422 naming the field on SQLite and on PostgreSQL alike."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.conftest import running_server, user
from tests.storage.conftest import postgres_opener

BIG = 18446744073709551616  # 2**64


@pytest.fixture(params=["sqlite", "postgres"])
async def backend(
    request: pytest.FixtureRequest, demo: Path, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    """A plain HTTP client on the demo served from SQLite, or from PostgreSQL + Redis."""
    options: dict[str, Any] = {}
    async with postgres_opener(request) as open_postgres:
        if request.param == "postgres":
            options["storage"] = await open_postgres(request.getfixturevalue("database_url"))
        async with (
            running_server(demo, tmp_path / "data", **options) as running,
            httpx.AsyncClient(base_url=running.url) as http,
        ):
            yield http


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


THREAD = "00000000-0000-4000-8000-000000000001"
BAD_BODIES: list[tuple[str, str, Any, str]] = [
    ("POST", "/threads/search", {"metadata": {"a": BIG}}, "metadata"),
    ("POST", "/threads/count", {"metadata": {"a": BIG}}, "metadata"),
    ("POST", "/threads", {"metadata": {"a": BIG}}, "metadata"),
    ("POST", "/assistants/search", {"metadata": {"a": BIG}}, "metadata"),
    ("POST", "/assistants/count", {"metadata": {"a": BIG}}, "metadata"),
    ("POST", "/assistants", {"graph_id": "demo", "metadata": {"a": BIG}}, "metadata"),
    ("POST", "/runs/crons/search", {"metadata": {"a": BIG}}, "metadata"),
    ("PUT", "/store/items", {"namespace": ["a"], "key": "k", "value": {"a": BIG}}, "value"),
    ("POST", "/store/items/search", {"filter": {"a": BIG}}, "filter"),
    ("POST", "/runs", {"assistant_id": "demo", "input": {"a": BIG}}, "input"),
    ("POST", "/threads/search", {"offset": 1e30}, "offset"),
    ("POST", "/threads/search", {"offset": 9223372036854775808}, "offset"),
    ("POST", "/assistants/search", {"offset": 9223372036854775808}, "offset"),
    ("POST", "/runs/crons/search", {"offset": 9223372036854775808}, "offset"),
    ("POST", "/store/items/search", {"offset": 9223372036854775808}, "offset"),
    ("POST", "/store/namespaces", {"offset": 9223372036854775808}, "offset"),
    ("POST", f"/threads/{THREAD}/history", {"limit": 9223372036854775808}, "limit"),
    ("POST", "/runs", {"assistant_id": "demo", "after_seconds": 1e308}, "after_seconds"),
    ("POST", "/runs/crons", {"assistant_id": "demo", "schedule": "0 0 31 2 *"}, "schedule"),
    ("POST", "/store/items/search", {"filter": {"a": {"$regex": "x"}}}, "filter"),
    ("POST", "/store/items/search", {"filter": {"a'b": 1}}, "filter"),
    ("POST", "/store/items/search", {"filter": {'a"b': 1}}, "filter"),
    ("POST", "/threads/search", {"metadata": {'a"b': 1}}, "metadata"),
    ("POST", "/threads", {"metadata": {'a"b': 1}}, "metadata"),
    ("PUT", "/store/items", {"namespace": ["a\u0000b"], "key": "k", "value": {}}, "namespace"),
    ("PUT", "/store/items", {"namespace": ["a"], "key": "k\u0000", "value": {}}, "key"),
    ("PUT", "/store/items", {"namespace": ["a"], "key": "k", "value": {"a": "\u0000"}}, "value"),
    ("POST", "/store/namespaces", {"prefix": ["a\u0000"]}, "prefix"),
    ("POST", "/threads", {"metadata": {"a": "x\u0000"}}, "metadata"),
    ("POST", "/threads", {"metadata": nested(300)}, "metadata"),
    ("POST", "/runs", {"assistant_id": "demo", "config": {"configurable": 5}}, "configurable"),
    ("POST", "/assistants", {"graph_id": "demo", "config": {"configurable": 5}}, "configurable"),
    ("PUT", "/store/items", {"namespace": [], "key": "k", "value": {}}, "namespace"),
]


BAD_URLS = [
    ("/.well-known/agent-card.json?assistant_id=%00", "query parameter assistant_id"),
    ("/a2a/a%00b/.well-known/agent-card.json", "path parameter assistant_id"),
    ("/assistants/%00", "path parameter assistant_id"),
    ("/store/items?namespace=a%00&key=k", "query parameter namespace"),
]
UNPARSABLE = [
    b'{"metadata": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"metadata": {"a": 1e400}}',
]


async def test_values_no_store_holds_are_422(backend: httpx.AsyncClient) -> None:
    """Each case on one server (a server per case would cost a minute)."""
    wrong = []
    requests: list[tuple[str, str, bytes | None, str]]
    requests = [(m, p, json.dumps(b).encode(), f) for m, p, b, f in BAD_BODIES]
    requests += [("GET", path, None, field) for path, field in BAD_URLS]
    requests += [("POST", "/threads/search", body, "body") for body in UNPARSABLE]
    for method, path, content, field in requests:
        response = await backend.request(
            method, path, content=content, headers={"Content-Type": "application/json"}
        )
        if response.status_code != 422 or field not in response.json()["detail"]:
            wrong.append((method, path, content and content[:80], response.text[:200]))
    assert not wrong, "\n".join(map(str, wrong))
    assert (await backend.get("/ok")).status_code == 200


async def test_state_update_of_the_wrong_type_is_422(backend: httpx.AsyncClient) -> None:
    thread = (await backend.post("/threads", json={})).json()["thread_id"]
    run = await backend.post(
        f"/threads/{thread}/runs/wait", json={"assistant_id": "demo", "input": user("hi")}
    )
    assert run.status_code == 200
    response = await backend.post(f"/threads/{thread}/state", json={"values": {"messages": 5}})
    assert response.status_code == 422, response.text
    assert "messages" in response.json()["detail"]
    assert (await backend.get(f"/threads/{thread}/state")).status_code == 200


async def test_keys_a_search_can_name_still_work(backend: httpx.AsyncClient) -> None:
    metadata = {"it's": 1, "a.b c": "é", "n": -(2**63), "m": 2**63 - 1, "d": nested(50)}
    created = await backend.post("/threads", json={"metadata": metadata})
    assert created.status_code == 200, created.text
    for key, value in metadata.items():
        found = await backend.post("/threads/search", json={"metadata": {key: value}})
        assert [t["thread_id"] for t in found.json()] == [created.json()["thread_id"]]
