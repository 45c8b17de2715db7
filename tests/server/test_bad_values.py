"""Values no store can hold or give back (numbers past 64 bits, NUL, lone surrogates, odd
keys, deep nesting, huge offsets and delays, long store keys) are a 422 naming the field on
SQLite and on PostgreSQL alike; what older versions stored anyway is read, not a 500."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.conftest import Running, running_server, user
from tests.storage.conftest import postgres_opener

BIG = 18446744073709551616  # 2**64
# A key PostgreSQL's index cannot compress into its ~2.7 KB (a repeated letter it can).
LONG_KEY = "".join(f"{n:x}" for n in range(2500))[:9000]


@pytest.fixture(params=["sqlite", "postgres"])
async def served(
    request: pytest.FixtureRequest, demo: Path, tmp_path: Path
) -> AsyncIterator[Running]:
    """The demo served from SQLite, or from PostgreSQL + Redis."""
    options: dict[str, Any] = {}
    async with postgres_opener(request) as open_postgres:
        if request.param == "postgres":
            options["storage"] = await open_postgres(request.getfixturevalue("database_url"))
        async with running_server(demo, tmp_path / "data", **options) as running:
            yield running


@pytest.fixture
async def backend(served: Running) -> AsyncIterator[httpx.AsyncClient]:
    """A plain HTTP client on `served`."""
    async with httpx.AsyncClient(base_url=served.url) as http:
        yield http


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


THREAD = "00000000-0000-4000-8000-000000000001"
CRON = {"assistant_id": "demo", "schedule": "0 0 * * *"}
HUGE_CONFIG = {"configurable": {"n": 1e30}}
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
    # Numbers PostgreSQL gives back as integers past 64 bits (1e30: 31 digits).
    ("POST", "/threads", {"metadata": {"n": 1e30}}, "metadata.n"),
    ("POST", "/threads", {"metadata": {"n": -1e19}}, "metadata.n"),
    ("POST", "/threads", {"metadata": {"n": 4.946528504409307e16}}, "metadata.n"),
    ("POST", "/runs/crons", {**CRON, "metadata": {"n": 1e30}}, "metadata.n"),
    ("POST", "/assistants", {"graph_id": "demo", "config": HUGE_CONFIG}, "config.configurable.n"),
    ("POST", "/runs", {"assistant_id": "demo", "config": HUGE_CONFIG}, "config.configurable.n"),
    ("POST", "/runs", {"assistant_id": "demo", "metadata": {"n": [1e300]}}, "metadata.n[0]"),
    ("PUT", "/store/items", {"namespace": ["a"], "key": "k", "value": {"n": 1e30}}, "value.n"),
    # Lone surrogates: no UTF-8 holds them.
    ("POST", "/runs", {"assistant_id": "demo", "input": user("\ud800")}, "input.messages[0]"),
    ("POST", "/threads", {"metadata": {"n": "a\udfffb"}}, "metadata.n"),
    ("POST", "/threads", {"metadata": {"\ud800": 1}}, "metadata key"),
    ("PUT", "/store/items", {"namespace": ["a"], "key": "k", "value": {"n": "\ud800"}}, "value.n"),
    ("PUT", "/store/items", {"namespace": ["a\ud800"], "key": "k", "value": {}}, "namespace"),
    ("PUT", "/store/items", {"namespace": ["a"], "key": "\ud800", "value": {}}, "key"),
    # The store's bounds.
    ("PUT", "/store/items", {"namespace": ["a"], "key": LONG_KEY, "value": {}}, "key"),
    ("PUT", "/store/items", {"namespace": ["a", LONG_KEY], "key": "k", "value": {}}, "namespace"),
    ("DELETE", "/store/items", {"namespace": ["a"], "key": LONG_KEY}, "key"),
    ("PUT", "/store/items", {"namespace": ["a"], "key": "k", "value": {}, "ttl": 5e-324}, "ttl"),
    ("POST", "/store/namespaces", {"max_depth": 2**31}, "max_depth"),
]  # fmt: skip


BAD_URLS = [
    ("/.well-known/agent-card.json?assistant_id=%00", "query parameter assistant_id"),
    ("/a2a/a%00b/.well-known/agent-card.json", "path parameter assistant_id"),
    ("/assistants/%00", "path parameter assistant_id"),
    ("/store/items?namespace=a%00&key=k", "query parameter namespace"),
    (f"/store/items?namespace=a&key={LONG_KEY}", "query parameter key"),
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


async def test_a2a_params_no_store_holds_are_invalid_params(backend: httpx.AsyncClient) -> None:
    """Not -32603 with Python's words: -32602 naming the param."""
    for text, named in [("\ud800", "lone surrogate"), ("a\u0000", "NUL")]:
        part = {"kind": "text", "text": text}
        message = {"role": "user", "messageId": "m1", "kind": "message", "parts": [part]}
        body = {"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": message}}
        reply = (await backend.post("/a2a/demo", content=json.dumps(body).encode())).json()
        assert reply["id"] == 3
        assert reply["error"]["code"] == -32602, reply
        assert reply["error"]["message"].startswith(
            "Invalid params: params.message.parts[0].text: "
        ), reply
        assert named in reply["error"]["message"]
        assert "Error" not in reply["error"]["message"]


# What an older version let in: JSON PostgreSQL gives back as an integer of 31 digits (it was
# 1e30), and, in SQLite's text, an escaped lone surrogate.
OLD_JSON = '{"n": 1000000000000000000000000000000, "s": "a\\ud800b"}'
OLD_VALUE = {"n": 1e30, "s": "a\ufffdb"}


async def stored_by_an_older_version(served: Running, table: str, column: str, key: str) -> None:
    """Overwrite the JSON `column` of every row of `table` (whose primary key column is `key`)
    straight in the database, as an older version could have written it."""
    storage: Any = served.server.storage
    if storage.kind == "sqlite":
        conn = storage.store_conn if table == "store" else storage.conn
        conn.execute(f"UPDATE {table} SET {column} = ? WHERE {key} IS NOT NULL", (OLD_JSON,))
        conn.commit()
    else:  # JSONB holds no lone surrogate at all
        text = OLD_JSON.replace("\\ud800", "?")
        async with storage.pool.connection() as conn:
            await conn.execute(
                f"UPDATE {table} SET {column} = %s::jsonb WHERE {key} IS NOT NULL", (text,)
            )


async def test_values_an_older_version_stored_are_read_not_a_500(
    served: Running, backend: httpx.AsyncClient
) -> None:
    thread = (await backend.post("/threads", json={"metadata": {"n": 1}})).json()["thread_id"]
    assistant = await backend.post(
        "/assistants", json={"graph_id": "demo", "metadata": {"n": 1}, "config": {"tags": []}}
    )
    assistant_id = assistant.json()["assistant_id"]
    cron = {"assistant_id": "demo", "schedule": "0 0 1 1 *", "metadata": {"n": 1}}
    assert (await backend.post("/runs/crons", json=cron)).status_code == 200
    run = await backend.post(
        f"/threads/{thread}/runs/wait", json={"assistant_id": "demo", "input": user("hi")}
    )
    assert run.status_code == 200, run.text
    item = {"namespace": ["old"], "key": "k", "value": {"n": 1}}
    assert (await backend.put("/store/items", json=item)).status_code == 204
    for table, column, key in [
        ("threads", "metadata", "thread_id"),
        ("assistant_versions", "metadata", "assistant_id"),
        ("assistant_versions", "config", "assistant_id"),
        ("crons", "metadata", "cron_id"),
        ("runs", "metadata", "run_id"),
        ("store", "value", "key"),
    ]:
        await stored_by_an_older_version(served, table, column, key)

    def same(value: dict[str, Any]) -> None:
        assert value["n"] == OLD_VALUE["n"], value
        assert value["s"] in (OLD_VALUE["s"], "a?b"), value  # "?" on PostgreSQL

    read = await backend.get(f"/threads/{thread}")
    assert read.status_code == 200, read.text
    same(read.json()["metadata"])
    for path in ["/threads/search", "/assistants/search", "/runs/crons/search"]:
        found = await backend.post(path, json={"limit": 100})
        assert found.status_code == 200, (path, found.text)
        assert found.json(), path
        for record in found.json():
            if "n" in record["metadata"]:
                same(record["metadata"])
    got = await backend.get(f"/assistants/{assistant_id}")
    assert got.status_code == 200, got.text
    same(got.json()["config"])
    runs = await backend.get(f"/threads/{thread}/runs")
    assert runs.status_code == 200, runs.text
    same(runs.json()[0]["metadata"])
    got_item = await backend.get("/store/items", params={"namespace": "old", "key": "k"})
    assert got_item.status_code == 200, got_item.text
    same(got_item.json()["value"])
    searched = await backend.post("/store/items/search", json={"namespace_prefix": ["old"]})
    assert searched.status_code == 200, searched.text
    same(searched.json()["items"][0]["value"])
    # Written again, the value is one the databases give back.
    patched = await backend.patch(f"/threads/{thread}", json={"metadata": {"m": 2}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["metadata"]["n"] == 1e30


async def test_values_at_the_edges_read_back_as_sent(backend: httpx.AsyncClient) -> None:
    """What is accepted is given back equal, on either backend."""
    edges = {
        "max": 2**63 - 1,
        "min": -(2**63),
        "big": 9.999999999999998e15,
        "small": -9.999999999999998e15,
        "tiny": 5e-324,
        "negative_zero": -0.0,
        "e16": 10**16,
        "e15": 1e15,
        "fraction": 0.1,
        "text": "é\U0001f600\u2028",
        "deep": nested(90),
    }
    created = await backend.post("/threads", json={"metadata": edges})
    assert created.status_code == 200, created.text
    read = await backend.get(f"/threads/{created.json()['thread_id']}")
    assert read.json()["metadata"] == edges
    item = {"namespace": ["edges"], "key": "é" * 512, "value": edges}
    assert (await backend.put("/store/items", json=item)).status_code == 204
    got = await backend.get("/store/items", params={"namespace": "edges", "key": "é" * 512})
    assert got.json()["value"] == edges
    listed = await backend.post("/store/namespaces", json={"max_depth": 2**31 - 1})
    assert listed.status_code == 200, listed.text
