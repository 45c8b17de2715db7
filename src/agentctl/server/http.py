"""The HTTP server under the app: uvicorn, with writes gathered per turn of the event loop.

uvicorn writes to the socket on every ASGI `send`: the status line and headers, then each
body chunk, each a system call. A streamed run sends a dozen small pieces, and on a
loopback socket the write itself is the dearest part of a send. Writes made in one turn
of the loop go out together here, in one call, at the end of that turn.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class _GatheredWrites:
    """A transport whose `write`s are joined and written once at the end of the loop turn."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(bytes(data))

    def _flush(self) -> None:
        if self._pending and not self._transport.is_closing():
            self._transport.write(b"".join(self._pending))
        self._pending.clear()

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class GatheringHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol on a transport that gathers writes."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        gathered = _GatheredWrites(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
        super().connection_made(gathered)  # type: ignore[arg-type]


def uvicorn_config(app: ASGIApp, **options: Any) -> uvicorn.Config:
    """The uvicorn settings every agentctl server runs with; `options` add to them."""
    settings: dict[str, Any] = {
        "http": GatheringHttpProtocol,
        "lifespan": "on",
        "log_config": None,
        "access_log": False,
        **options,
    }
    return uvicorn.Config(app, **settings)
