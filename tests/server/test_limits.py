"""What one request may cost: body size, input messages, slow clients, open connections and
values-filtered thread searches are bounded, and a request past a bound gets a clear answer."""

from __future__ import annotations

import asyncio
import json
import logging
import resource
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentctl.errors import SettingsError
from agentctl.server.limits import Limits, allow_open_files
from agentctl.settings import Settings
from tests.server.conftest import Running, running_server, user


@pytest.fixture
async def limited(demo: Path, tmp_path: Path) -> AsyncIterator[Running]:
    limits = Limits(
        max_body_mb=1,
        max_input_messages=3,
        max_search_scan=3,
        header_timeout_seconds=0.5,
        body_timeout_seconds=0.5,
        max_connections=8,
    )
    async with running_server(demo, tmp_path / "data", limits=limits) as running:
        yield running


@pytest.fixture
async def http(limited: Running) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=limited.url) as client:
        yield client


def _port(running: Running) -> int:
    return int(running.url.rsplit(":", 1)[1])


async def _read_all(reader: asyncio.StreamReader, seconds: float = 5.0) -> bytes:
    """What the server sends until it closes the connection (fails after `seconds`)."""
    return await asyncio.wait_for(reader.read(), seconds)


def _detail(raw: bytes) -> str:
    detail: str = json.loads(raw.split(b"\r\n\r\n", 1)[1])["detail"]
    return detail


def messages(n: int) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"m{i}"} for i in range(n)]}


async def test_too_many_input_messages_are_refused(
    limited: Running, http: httpx.AsyncClient
) -> None:
    response = await http.post("/runs/wait", json={"assistant_id": "demo", "input": messages(4)})
    assert response.status_code == 413
    detail = response.json()["detail"]
    assert "input.messages has 4 messages" in detail
    assert "limit 3" in detail
    assert "AGENTCTL_MAX_INPUT_MESSAGES" in detail

    thread = await limited.client.threads.create()
    response = await http.post(
        f"/threads/{thread['thread_id']}/state", json={"values": messages(5), "as_node": "model"}
    )
    assert response.status_code == 413
    assert "values.messages has 5 messages" in response.json()["detail"]
    step = {"updates": [{"values": messages(4), "as_node": "model"}]}
    response = await http.post("/threads", json={"supersteps": [step]})
    assert response.status_code == 413
    assert "supersteps[0].updates[0].values.messages" in response.json()["detail"]
    assert await limited.client.threads.count() == 1  # nothing was created

    answer = await http.post("/runs/wait", json={"assistant_id": "demo", "input": messages(3)})
    assert answer.status_code == 200


async def test_the_body_limit_is_configurable(http: httpx.AsyncClient) -> None:
    body = {"assistant_id": "demo", "input": user("x" * (1024 * 1024))}
    response = await http.post("/runs/wait", json=body)
    assert response.status_code == 413
    detail = response.json()["detail"]
    assert "larger than 1 MiB" in detail
    assert "AGENTCTL_MAX_BODY_MB" in detail
    assert (await http.get("/ok")).status_code == 200


async def test_headers_sent_too_slowly_close_the_connection(
    limited: Running, http: httpx.AsyncClient
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", _port(limited))
    request = b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"x" * 40

    async def trickle() -> None:
        for byte in request:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.05)

    trickling = asyncio.create_task(trickle())
    try:
        assert (await http.get("/ok")).status_code == 200  # others are served meanwhile
        raw = await _read_all(reader)
    finally:
        trickling.cancel()
        writer.close()
    assert raw.startswith(b"HTTP/1.1 408 ")
    assert "AGENTCTL_HEADER_TIMEOUT_SECONDS" in _detail(raw)
    assert not trickling.done() or trickling.cancelled()  # closed before it finished


async def test_a_body_sent_too_slowly_gets_408(limited: Running, http: httpx.AsyncClient) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", _port(limited))
    writer.write(
        b"POST /threads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b'Content-Length: 100\r\n\r\n{"metadata": '
    )
    await writer.drain()
    assert (await http.get("/ok")).status_code == 200
    raw = await _read_all(reader)
    writer.close()
    assert raw.startswith(b"HTTP/1.1 408 ")
    assert b"connection: close" in raw.lower()
    assert "AGENTCTL_BODY_TIMEOUT_SECONDS" in _detail(raw)
    assert await limited.client.threads.count() == 0


async def test_connections_past_the_limit_get_503_and_one_warning(
    limited: Running, caplog: pytest.LogCaptureFixture
) -> None:
    port = _port(limited)
    # Idle keep-alive connections: each made one request and stays open.
    held = []
    for _ in range(8):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await reader.readuntil(b"\r\n\r\n")
        held.append(writer)
    try:
        with caplog.at_level(logging.WARNING, logger="agentctl.server"):
            for _ in range(3):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                raw = await _read_all(reader)
                writer.close()
                assert raw.startswith(b"HTTP/1.1 503 ")
                assert "AGENTCTL_MAX_CONNECTIONS" in _detail(raw)
        warnings = [r for r in caplog.records if "connection limit reached" in r.getMessage()]
        assert len(warnings) == 1
    finally:
        for writer in held:
            writer.close()
    async with httpx.AsyncClient(base_url=limited.url) as fresh:
        for _ in range(50):  # the server notices the closed ones
            response = await fresh.get("/ok")
            if response.status_code == 200:
                break
            await asyncio.sleep(0.05)
        assert response.status_code == 200


async def test_a_values_search_reads_a_bounded_number_of_threads(
    limited: Running, http: httpx.AsyncClient
) -> None:
    threads = limited.client.threads
    skills = ["review"]  # a plain channel of the deep agent (messages are a delta channel)
    step: list[dict[str, Any]] = [
        {"updates": [{"values": {"pinned_skills": skills}, "as_node": "model"}]}
    ]
    made = [await threads.create(metadata={"group": "a"}, supersteps=step) for _ in range(2)]
    await threads.create(metadata={"group": "b"})
    await threads.create(metadata={"group": "b"}, supersteps=step)

    response = await http.post("/threads/search", json={"values": {"pinned_skills": skills}})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert "4 here" in detail
    assert "AGENTCTL_MAX_SEARCH_SCAN" in detail
    response = await http.post("/threads/count", json={"values": {"pinned_skills": skills}})
    assert response.status_code == 422

    found = await threads.search(metadata={"group": "a"}, values={"pinned_skills": skills})
    assert {t["thread_id"] for t in found} == {t["thread_id"] for t in made}
    assert all((t["values"] or {}).get("pinned_skills") == skills for t in found)
    assert await threads.count(metadata={"group": "b"}, values={"pinned_skills": skills}) == 1
    assert await threads.count(metadata={"group": "b"}, values={"pinned_skills": []}) == 0
    page = await threads.search(metadata={"group": "a"}, values={"pinned_skills": skills}, limit=1)
    assert len(page) == 1


def test_limits_come_from_the_environment() -> None:
    limits = Limits.from_env({"AGENTCTL_MAX_BODY_MB": "2", "AGENTCTL_HEADER_TIMEOUT_SECONDS": "3"})
    assert limits == Limits(max_body_mb=2, header_timeout_seconds=3.0)
    settings = Settings.from_env({"AGENTCTL_MAX_INPUT_MESSAGES": "5"})
    assert Limits.of(settings) == Limits(max_input_messages=5)
    with pytest.raises(SettingsError, match="AGENTCTL_MAX_CONNECTIONS"):
        Limits.from_env({"AGENTCTL_MAX_CONNECTIONS": "lots"})


def test_the_server_raises_its_open_file_limit_to_fit_its_connections() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2 * 1000 + 256:
        pytest.skip(f"the hard limit of open files here ({hard}) is too low to raise to")
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, hard))
    try:
        allow_open_files(1000)
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 2 * 1000 + 256
        allow_open_files(100)  # never lowered
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 2 * 1000 + 256
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_an_idle_connection_stays_open_longer_than_clients_keep_theirs(
    limited: Running,
) -> None:
    """A kept-alive connection idle for 6 s (past httpx's 5 s and uvicorn's default) still
    takes the next request, so a client never reuses one the server is closing."""
    reader, writer = await asyncio.open_connection("127.0.0.1", _port(limited))
    request = b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    try:
        for pause in (0.0, 6.0):
            await asyncio.sleep(pause)
            writer.write(request)
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            assert head.startswith(b"HTTP/1.1 200 ")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            )
            await reader.readexactly(length)
    finally:
        writer.close()


@pytest.fixture
async def small_events(demo: Path, tmp_path: Path) -> AsyncIterator[Running]:
    """A server whose streamed events may hold 1 MiB (its bodies 4)."""
    limits = Limits(max_body_mb=4, max_event_mb=1)
    async with running_server(demo, tmp_path / "data", limits=limits) as running:
        yield running


async def test_what_no_event_could_carry_is_refused_naming_the_limit(
    small_events: Running,
) -> None:
    """A run's input or command over the event limit, its metadata or tags over their share
    of it (every message chunk repeats them), a state update's values over it: 413, naming
    AGENTCTL_MAX_EVENT_MB."""
    thread_id = (await small_events.client.threads.create())["thread_id"]
    big = "x" * 1_200_000
    refused = [
        ("runs/stream", {"input": user(big)}, "input is 1.14 MiB"),
        ("runs/wait", {"command": {"resume": big}}, "command is 1.14 MiB"),
        ("runs", {"input": user("hi"), "metadata": {"note": "m" * 20_000}}, "metadata and"),
        ("runs", {"input": user("hi"), "config": {"tags": ["t" * 20_000]}}, "repeated in every"),
    ]
    async with httpx.AsyncClient(base_url=small_events.url) as http:
        for path, body, said in refused:
            response = await http.post(
                f"/threads/{thread_id}/{path}", json={"assistant_id": "demo", **body}
            )
            assert response.status_code == 413, response.text
            detail = response.json()["detail"]
            assert said in detail
            assert "AGENTCTL_MAX_EVENT_MB" in detail
            assert "limit 1 MiB" in detail
        response = await http.post(
            f"/threads/{thread_id}/state", json={"values": user(big), "as_node": "model"}
        )
        assert response.status_code == 413
        assert "values is 1.14 MiB" in response.json()["detail"]
    assert await small_events.client.runs.list(thread_id) == []


async def test_an_event_over_the_limit_is_replaced_by_an_error_in_its_place(
    small_events: Running,
) -> None:
    """A 0.7 MiB message fits in an event; the state after the model's answer holds it
    twice (the agent keeps a copy of a large message in its files) and does not: that
    `values` event is stored and sent as an `EventTooLarge` error, and the run goes on."""
    client = small_events.client
    thread_id = (await client.threads.create())["thread_id"]
    message = "hello " + "x" * 700_000
    parts = [
        part
        async for part in client.runs.stream(
            thread_id, "demo", input=user(message), stream_mode=["values", "updates"]
        )
    ]
    values = [part.data for part in parts if part.event == "values"]
    assert values[0]["messages"][0]["content"] == message
    replaced = [v["__error__"] for v in values if "__error__" in v]
    assert replaced, [list(v) for v in values]
    assert replaced[0]["error"] == "EventTooLarge"
    assert "AGENTCTL_MAX_EVENT_MB" in replaced[0]["message"]
    assert (parts[-1].event, parts[-1].data["status"]) == ("end", "success")
    run_id = parts[0].data["run_id"]
    stored = await small_events.server.storage.events.read(thread_id, after=None)
    assert max(len(event.data) for event in stored) <= 1024 * 1024
    joined = [p async for p in client.runs.join_stream(thread_id, run_id, last_event_id="-")]
    assert [p.data for p in joined] == [p.data for p in parts]  # what was stored is what went
    state: Any = await client.threads.get_state(thread_id)
    assert state["values"]["messages"][-1]["content"].startswith("scripted reply to:")
