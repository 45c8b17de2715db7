"""Malformed requests get JSON errors with the right status, and the server keeps serving."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.server.conftest import UNKNOWN_ID, Running, assert_json_error, user


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "detail"),
    [
        ("POST", "/runs/wait", b"{not json", 422, "not valid JSON"),
        ("POST", "/runs/wait", b'{"assistant_id": 5, "input": {}}', 422, "assistant_id"),
        ("POST", "/runs/wait", b'{"input": {}}', 422, "assistant_id"),
        (
            "POST",
            "/runs/stream",
            b'{"assistant_id": "demo", "stream_mode": "everything"}',
            422,
            "unknown stream mode 'everything'",
        ),
        (
            "POST",
            "/runs",
            b'{"assistant_id": "demo", "multitask_strategy": "sometimes"}',
            422,
            "multitask_strategy",
        ),
        ("POST", "/runs", b'{"assistant_id": "demo", "after_seconds": -1}', 422, "after_seconds"),
        ("POST", "/threads/not-a-uuid/runs", b'{"assistant_id": "demo"}', 422, "not a UUID"),
        ("GET", f"/threads/{UNKNOWN_ID}/runs/{UNKNOWN_ID}", b"", 404, "not found"),
        ("GET", f"/threads/{UNKNOWN_ID}/stream", b"", 404, "not found"),
        ("POST", "/runs/cancel", b"{}", 422, "say which runs"),
        ("GET", "/nowhere", b"", 404, "no endpoint GET /nowhere"),
        ("DELETE", "/runs/wait", b"", 405, "not allowed"),
    ],
)
async def test_bad_requests_get_json_errors(
    http: httpx.AsyncClient, method: str, path: str, body: bytes, status: int, detail: str
) -> None:
    await assert_json_error(http, method, path, body, status, detail)
    still = await http.post("/runs/wait", json={"assistant_id": "demo", "input": user("ok")})
    assert still.status_code == 200


async def test_huge_body_is_refused_without_being_read(http: httpx.AsyncClient) -> None:
    huge = b'{"assistant_id": "demo", "input": "' + b"x" * (11 * 1024 * 1024) + b'"}'
    response = await http.post("/runs", content=huge, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert "larger than 10 MiB" in response.json()["detail"]

    # No Content-Length: the limit applies while reading.
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(12):
            yield b"x" * (1024 * 1024)

    response = await http.post("/runs", content=chunks())
    assert response.status_code == 413
    assert (await http.get("/ok")).status_code == 200


async def test_bad_last_event_id_is_422(agent: Running, http: httpx.AsyncClient) -> None:
    thread_id = str(uuid.uuid4())
    run = await agent.client.runs.create(thread_id, "demo", input=user("x"), if_not_exists="create")
    response = await http.get(
        f"/threads/{thread_id}/runs/{run['run_id']}/stream", headers={"Last-Event-ID": "banana"}
    )
    assert response.status_code == 422
    assert "not an event id" in response.json()["detail"]


@pytest.mark.parametrize("path", ["/threads/%2F", "/threads/", "/assistants/search/", "/ok/"])
async def test_a_path_no_route_has_is_404_not_a_redirect(
    http: httpx.AsyncClient, path: str
) -> None:
    response = await http.get(path)
    assert response.status_code in (404, 405), response.text
    assert response.json()["detail"]
