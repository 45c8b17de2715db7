"""The HTTP server under the app: uvicorn, with writes gathered per turn of the event loop.

uvicorn writes to the socket on every ASGI `send`: the status line and headers, then each
body chunk, each a system call. A streamed run sends a dozen small pieces, and on a
loopback socket the write itself is the dearest part of a send. Writes made in one turn
of the loop go out together here, in one call, at the end of that turn, or at once when they
finish a response: the client is waiting for nothing else.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from agentctl.errors import UserError


class _GatheredWrites:
    """A transport whose `write`s are joined and written once at the end of the loop turn."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def flush(self) -> None:
        if self._pending and not self._transport.is_closing():
            self._transport.write(b"".join(self._pending))
        self._pending.clear()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class GatheringHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol on a transport that gathers writes."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        gathered = _GatheredWrites(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
        super().connection_made(gathered)  # type: ignore[arg-type]

    def on_response_complete(self) -> None:
        self.transport.flush()  # type: ignore[attr-defined]
        super().on_response_complete()


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


class PortInUseError(UserError):
    """Something else listens on the address `agentctl dev` was asked to use."""


def listen_socket(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port`, ready to serve; the error names the port when taken."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise UserError(
            f"cannot listen on {host}: {exc.strerror} — use an address of this machine "
            "with --host, e.g. 127.0.0.1"
        ) from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUseError(
                f"port {port} on {host} is already in use — stop what is using it or choose "
                "another port with --port"
            ) from None
        raise UserError(
            f"cannot listen on port {port} of {host}: {exc.strerror} — choose another port "
            "with --port or another address with --host"
        ) from None
    return sock


def base_url(host: str, port: int) -> str:
    """The URL a client on this machine uses; a wildcard address is reached on loopback."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class NotifyingUvicorn(uvicorn.Server):
    """uvicorn, telling us when it has started and before it stops."""

    def __init__(
        self,
        config: uvicorn.Config,
        *,
        on_started: Callable[[], None],
        on_stopping: Callable[[], Any],
    ) -> None:
        super().__init__(config)
        self._on_started = on_started
        self._on_stopping = on_stopping

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and not self.should_exit:
            self._on_started()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await self._on_stopping()
        await super().shutdown(sockets)
