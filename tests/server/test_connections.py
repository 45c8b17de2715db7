"""What one connection may hold of a server, with no sign-in: over-long or too many headers
(WebSocket handshakes included), a body still arriving after its answer, stray bytes on an
idle kept-alive connection, an answer the client never reads. Each is answered or closed
within its bound, on raw sockets against a real server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from agentctl.server import connections
from agentctl.server.limits import Limits
from tests.server.conftest import Running, running_server

SLOTS = 8


@pytest.fixture
async def bounded(demo: Path, tmp_path: Path) -> AsyncIterator[Running]:
    limits = Limits(
        header_timeout_seconds=0.5,
        max_header_kb=16,
        body_timeout_seconds=0.5,
        write_timeout_seconds=0.5,
        max_connections=SLOTS,
    )
    async with running_server(demo, tmp_path / "data", limits=limits) as running:
        yield running


def _port(running: Running) -> int:
    return int(running.url.rsplit(":", 1)[1])


async def _connect(running: Running) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", _port(running))


async def _until_closed(reader: asyncio.StreamReader, seconds: float = 5.0) -> bytes:
    """What the server sends until it closes the connection (fails after `seconds`). A close
    with bytes of the client's still unread is a reset: it ends the connection too, and what
    came before it is kept."""
    received = bytearray()

    async def read_all() -> None:
        while chunk := await reader.read(65536):
            received.extend(chunk)

    with contextlib.suppress(ConnectionResetError):
        await asyncio.wait_for(read_all(), seconds)
    return bytes(received)


def _detail(raw: bytes) -> str:
    detail: str = json.loads(raw.split(b"\r\n\r\n", 1)[1])["detail"]
    return detail


async def _served(running: Running) -> None:
    """A plain request is answered 200 (once the server has noticed closed connections)."""
    async with httpx.AsyncClient(base_url=running.url) as client:
        for _ in range(50):
            response = await client.get("/ok")
            if response.status_code == 200:
                return
            await asyncio.sleep(0.05)
    assert response.status_code == 200, response.text


UPGRADE = (
    b"GET /threads/t/stream/events HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
    b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    b"Sec-WebSocket-Version: 13\r\n"
)


async def test_websocket_handshakes_with_oversized_headers_are_answered_and_closed(
    bounded: Running,
) -> None:
    """More such handshakes than the server has slots, each left open by its client: each
    is answered 431 and closed, and the server serves others right after."""
    long_line = UPGRADE + b"X-Padding: " + b"x" * 9000 + b"\r\n\r\n"
    many = UPGRADE + b"".join(b"X-%d: y\r\n" % i for i in range(200)) + b"\r\n"
    held = []
    try:
        for i in range(SLOTS + 4):
            reader, writer = await _connect(bounded)
            held.append(writer)
            writer.write(long_line if i % 2 else many)
            raw = await _until_closed(reader)
            assert raw.startswith(b"HTTP/1.1 431 "), raw[:200]
            expected = "longer than 8192 bytes" if i % 2 else "205 headers, more than 128"
            assert expected in _detail(raw)
        await _served(bounded)
    finally:
        for writer in held:
            writer.close()


async def test_a_handshake_the_websocket_library_refuses_is_answered_and_closed(
    bounded: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the server's own check lets through, the websockets library's refusal of a
    handshake is sent and the connection closed (uvicorn sends none and keeps it open)."""
    monkeypatch.setattr(connections, "_handshake_refusal", lambda *_: None)
    reader, writer = await _connect(bounded)
    writer.write(UPGRADE + b"X-Padding: " + b"x" * 9000 + b"\r\n\r\n")
    try:
        raw = await _until_closed(reader)
    finally:
        writer.close()
    assert raw.startswith(b"HTTP/1.1 431 ")
    assert b"Failed to open a WebSocket connection" in raw
    await _served(bounded)


async def test_headers_trickled_or_too_large_are_refused_for_plain_requests_and_upgrades(
    bounded: Running,
) -> None:
    big = b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Cookie: " + b"c" * 20_000 + b"\r\n\r\n"
    reader, writer = await _connect(bounded)
    writer.write(big)
    raw = await _until_closed(reader)
    writer.close()
    assert raw.startswith(b"HTTP/1.1 431 ")
    detail = _detail(raw)
    assert "request line and headers are larger than 16 KiB" in detail
    assert "AGENTCTL_MAX_HEADER_KB" in detail

    # Many small headers count the same; a request within the bound is served.
    reader, writer = await _connect(bounded)
    writer.write(b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    for i in range(2000):
        writer.write(b"X-%d: v\r\n" % i)
    writer.write(b"\r\n")
    raw = await _until_closed(reader)
    writer.close()
    assert raw.startswith(b"HTTP/1.1 431 ")

    # A handshake trickled byte by byte is closed at the header timeout, as a request is.
    for request in (UPGRADE, b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n"):
        reader, writer = await _connect(bounded)
        trickling = asyncio.create_task(_trickle(writer, request + b"X-Slow: " + b"s" * 200))
        try:
            raw = await _until_closed(reader)
        finally:
            trickling.cancel()
            writer.close()
        assert raw.startswith(b"HTTP/1.1 408 ")
        assert "AGENTCTL_HEADER_TIMEOUT_SECONDS" in _detail(raw)
    await _served(bounded)


async def _trickle(writer: asyncio.StreamWriter, data: bytes) -> None:
    for byte in data:
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(0.02)


async def test_a_body_still_arriving_after_its_answer_is_cut_off(bounded: Running) -> None:
    """The app answers before reading the body (an unknown route): the client may not keep
    the connection by sending the rest of a huge body a byte at a time."""
    reader, writer = await _connect(bounded)
    writer.write(b"POST /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n")
    trickling = asyncio.create_task(_trickle(writer, b"b" * 10_000))
    try:
        raw = await _until_closed(reader)
    finally:
        trickling.cancel()
        writer.close()
    assert raw.startswith(b"HTTP/1.1 404 ")
    assert not trickling.done() or trickling.cancelled()  # closed before it finished


async def test_stray_bytes_do_not_keep_an_idle_connection_open(
    bounded: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connections, "KEEP_ALIVE_SECONDS", 0.5)
    reader, writer = await _connect(bounded)
    writer.write(b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await reader.readuntil(b'{"ok":true}')

    async def blank_lines() -> None:  # what a parser skips between requests
        while True:
            writer.write(b"\r\n")
            await asyncio.sleep(0.1)

    sending = asyncio.create_task(blank_lines())
    try:
        assert await _until_closed(reader) == b""
    finally:
        sending.cancel()
        writer.close()


async def test_a_client_that_reads_nothing_is_dropped(bounded: Running) -> None:
    """Pipelined requests whose answers the client never reads: once the socket's buffers
    are full, the server waits `write_timeout_seconds`, then drops the connection."""
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.connect(("127.0.0.1", _port(bounded)))
    client.setblocking(False)
    loop = asyncio.get_running_loop()
    request = b"GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    async with httpx.AsyncClient(base_url=bounded.url) as http:
        one = len((await http.get("/openapi.json")).content)
    received = 0
    try:
        for _ in range(100):
            await loop.sock_sendall(client, request)
        await asyncio.sleep(2)  # reads nothing meanwhile
        while chunk := await asyncio.wait_for(loop.sock_recv(client, 1 << 20), 5):
            received += len(chunk)
    except ConnectionResetError:
        pass
    finally:
        client.close()
    assert received < 100 * one  # dropped before all of it was sent
    await _served(bounded)
