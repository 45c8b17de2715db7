"""Property tests: every operation of `/openapi.json`, given hostile values for its body
fields and parameters (integers past 64 bits, huge and tiny floats, -0.0, NUL, lone
surrogates, odd and long keys, deep nesting, wrong types), answers a JSON `{"detail": ...}`
4xx or a success — never a 500, and always a status the document lists for it — on SQLite
and on PostgreSQL; and a value at the backends' edges that is accepted reads back equal.
The budget is bounded (see `EXAMPLES`) so the suite stays quick."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server.conftest import running_server
from tests.storage.conftest import postgres_opener

# The server runs in a thread of this process, and its libraries (psycopg's pool, Redis'
# backoff) draw from the global `random` while Hypothesis draws here: Hypothesis would take
# that for a strategy using `random`. None of this module's strategies does.
pytestmark = pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies")

EXAMPLES = {"sqlite": 1500, "postgres": 600}
READ_BACK_EXAMPLES = 150
# Operations that wait for a run or stream without end are left out (their inputs are the
# ones `POST /runs` takes, which is in); MCP and A2A speak JSON-RPC through their SDKs.
SKIPPED = re.compile(r"/(wait|stream|join|events)$|^/(mcp|a2a)|/stream/|/commands$")

# Past 64 bits, either side of it, and floats PostgreSQL gives back in other digits.
EDGE_NUMBERS = [
    *(2**63, -(2**63) - 1, 2**64, 10**30, 1e30, 1e308, -1e308, -1, 0, 2**63 - 1, -(2**63)),
    *(9.2e18, 9.999999999999998e15, 1e16, 4.946528504409307e16, -0.0, 5e-324, 1e-7, 0.1),
    2.2250738585072014e-308,
]
EDGE_TEXT = [
    *("\x00", "a\x00b", 'a"b', "a\\b", "a'b", "$regex", "a.b", "", "é", "\n", "*"),
    *("\ud800", "a\udfffb", "\U0001f600", "\u2028", "k" * 1100),
]
# What a URL can carry: UTF-8, so no lone surrogate.
URL_TEXT = [text for text in EDGE_TEXT if not any(0xD800 <= ord(c) <= 0xDFFF for c in text)]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(EDGE_NUMBERS),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(EDGE_TEXT),
)
keys = st.one_of(st.text(max_size=6), st.sampled_from([*EDGE_TEXT, "$eq", "$gt", "configurable"]))
hostile = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8,
)


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


values = st.one_of(hostile, st.just(nested(300)), st.just([nested(120)]))

JSON = {"Content-Type": "application/json"}

# Plausible values, so that a request gets past its required fields to the code behind.
PLAUSIBLE: dict[str, Any] = {
    "assistant_id": "demo",
    "graph_id": "demo",
    "namespace": ["props"],
    "key": "k",
    "value": {"v": 1},
    "schedule": "* * * * *",
    "as_node": "model",
}


@dataclass
class Operation:
    method: str
    path: str
    body: list[str]  # the body's field names (none: the operation takes no JSON body)
    query: list[str]
    has_body: bool
    statuses: set[int]  # the ones the document lists


def operations(openapi: dict[str, Any]) -> list[Operation]:
    schemas = openapi["components"]["schemas"]
    found = []
    for path, item in openapi["paths"].items():
        if SKIPPED.search(path):
            continue
        for method, op in item.items():
            content = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            schema = content.get("schema", {})
            refs = [schema, *schema.get("anyOf", [])]
            names: list[str] = []
            for ref in refs:
                if "$ref" in ref:
                    names += list(schemas[ref["$ref"].rsplit("/", 1)[1]].get("properties", {}))
            query = [p["name"] for p in op.get("parameters", []) if p["in"] == "query"]
            statuses = {int(code) for code in op["responses"]}
            found.append(Operation(method.upper(), path, names, query, bool(content), statuses))
    return found


@dataclass
class Target:
    http: httpx.Client
    operations: list[Operation]
    thread_id: str
    backend: str


def serve_in_thread(request: pytest.FixtureRequest, demo: Path, tmp_path: Path) -> Iterator[str]:
    """The demo served from its own event loop in a thread (Hypothesis drives it from
    this one); yields its URL."""
    url: Future[str] = Future()
    stop = threading.Event()

    async def main() -> None:
        options: dict[str, Any] = {}
        async with postgres_opener(request) as open_postgres:
            if request.param == "postgres":
                options["storage"] = await open_postgres(request.getfixturevalue("database_url"))
            async with running_server(demo, tmp_path / "data", **options) as running:
                url.set_result(running.url)
                while not stop.is_set():
                    await asyncio.sleep(0.05)

    thread = threading.Thread(target=lambda: asyncio.run(main()))
    thread.start()
    try:
        yield url.result(timeout=60)
    finally:
        stop.set()
        thread.join()


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, demo: Path, tmp_path: Path) -> Iterator[Target]:
    if request.param == "postgres":  # fetched here, in the test's thread
        request.getfixturevalue("database_url")
    for url in serve_in_thread(request, demo, tmp_path):
        with httpx.Client(base_url=url, timeout=30) as http:
            thread_id = http.post("/threads", json={}).json()["thread_id"]
            ops = operations(http.get("/openapi.json").json())
            yield Target(http, ops, thread_id, request.param)


def path_of(op: Operation, target: Target, draw: st.DrawFn) -> str:
    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        plausible = target.thread_id if name.endswith("_id") else "demo"
        if name == "assistant_id":
            plausible = "demo"
        text = draw(st.one_of(st.just(plausible), st.text(max_size=6), st.sampled_from(URL_TEXT)))
        # Dots escaped too: a client drops a `.` or `..` segment, asking another path.
        return quote(text, safe="").replace(".", "%2E") or "x"

    return re.sub(r"\{(\w+)(?::path)?\}", fill, op.path)


@st.composite
def requests(
    draw: st.DrawFn, target: Target
) -> tuple[Operation, str, dict[str, str], bytes | None]:
    op = draw(st.sampled_from(target.operations))
    path = path_of(op, target, draw)
    query: dict[str, str] = {}
    for name in op.query:
        if draw(st.booleans()):
            value = draw(st.one_of(st.sampled_from(URL_TEXT), st.sampled_from(EDGE_NUMBERS)))
            query[name] = str(value).lower() if isinstance(value, bool) else str(value)
    content = None
    if op.has_body:
        body = {}
        for name in op.body:
            choice = draw(st.integers(0, 2))
            if choice == 1:
                body[name] = draw(values)
            elif choice == 2 and name in PLAUSIBLE:
                body[name] = PLAUSIBLE[name]
        content = json.dumps(body).encode()
    return op, path, query, content


def test_no_input_is_a_server_error(target: Target) -> None:
    statuses: Counter[int] = Counter()

    @settings(
        max_examples=EXAMPLES[target.backend],
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def check(data: st.DataObject) -> None:
        op, path, query, content = data.draw(requests(target))
        method = op.method
        response = target.http.request(
            method, path, params=query, content=content,
            headers={"Content-Type": "application/json"} if content is not None else {},
        )  # fmt: skip
        statuses[response.status_code] += 1
        assert response.status_code < 500, (method, path, query, content, response.text)
        if response.status_code >= 400:
            assert isinstance(response.json()["detail"], str), response.text
        # The document tells the truth: the answer's status is one it lists.
        assert response.status_code in op.statuses, (method, op.path, response.text)

    check()
    print(sorted(statuses.items()))
    # The plausible values get requests past validation too.
    assert sum(n for status, n in statuses.items() if status < 300) > EXAMPLES[target.backend] / 20
    assert target.http.get("/ok").status_code == 200


def test_accepted_values_read_back_equal(target: Target) -> None:
    """A value at the backends' edges is refused (422) or stored and given back equal: as
    thread metadata and as a store item's value, whose key may be one of its edge texts."""
    http = target.http

    @settings(
        max_examples=READ_BACK_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(value=values, key=keys)
    def check(value: Any, key: str) -> None:
        created = http.post(
            "/threads", content=json.dumps({"metadata": {"v": value}}), headers=JSON
        )
        assert created.status_code in (200, 422), created.text
        if created.status_code == 200:
            thread = http.get(f"/threads/{created.json()['thread_id']}")
            assert thread.json()["metadata"] == {"v": value}
        item = {"namespace": ["edges"], "key": key or "k", "value": {"v": value}}
        put = http.put("/store/items", content=json.dumps(item), headers=JSON)
        assert put.status_code in (204, 422), put.text
        if put.status_code == 204:
            got = http.get("/store/items", params={"namespace": "edges", "key": key or "k"})
            assert got.status_code == 200, got.text
            assert got.json()["value"] == {"v": value}

    check()
