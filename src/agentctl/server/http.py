"""The HTTP server under the app: uvicorn, with writes gathered per turn of the event loop,
a deadline for a request's headers and a bound on open connections.

uvicorn writes to the socket on every ASGI `send`: the status line and headers, then each
body chunk, each a system call. A streamed run sends a dozen small pieces, and on a
loopback socket the write itself is the dearest part of a send. Writes made in one turn
of the loop go out together here, in one call, at the end of that turn, or at once when they
finish a response: the client is waiting for nothing else.

uvicorn itself waits for a request's headers as long as the client likes, and accepts any
number of connections: a few thousand clients trickling bytes hold a replica. Here a
connection gets `header_timeout_seconds` to send each request's headers (the body's deadline
is `limits.BodyLimit`'s), and one past `max_connections` is answered 503 at once.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from agentctl import serde
from agentctl.errors import PortInUseError, UserError
from agentctl.server.limits import Limits, Occurrences, allow_open_files, beyond

log = logging.getLogger("agentctl.server")
_FULL = Occurrences(
    log, "connection limit reached: %d connections open, new ones are refused with 503 — raise "
    "AGENTCTL_MAX_CONNECTIONS if the clients are legitimate",
)  # fmt: skip
_SLOW = Occurrences(
    log, "closed a connection that sent no complete request headers within %g s "
    "(AGENTCTL_HEADER_TIMEOUT_SECONDS)",
)  # fmt: skip


def _raw_response(status: str, detail: str) -> bytes:
    """A whole response with a JSON `detail`, for connections the app never sees."""
    body = serde.dumps({"detail": detail})
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


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
    """uvicorn's httptools protocol on a transport that gathers writes, with a deadline for
    each request's headers and a bound on open connections (`limits`)."""

    limits = Limits()
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if len(self.connections) >= self.limits.max_connections:
            self.transport = transport  # type: ignore[assignment]
            _FULL.note(len(self.connections))
            detail = beyond("the server has too many connections open", "max_connections",
                            self.limits.max_connections, "try again shortly")  # fmt: skip
            transport.write(_raw_response("503 Service Unavailable", detail))  # type: ignore[attr-defined]
            transport.close()
            return
        gathered = _GatheredWrites(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
        super().connection_made(gathered)  # type: ignore[arg-type]
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_arrived()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._await_headers()  # the next request on a kept-alive connection

    def on_headers_complete(self) -> None:
        self._headers_arrived()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        self.transport.flush()  # type: ignore[attr-defined]
        super().on_response_complete()

    def _await_headers(self) -> None:
        if self._header_timer is None:
            timeout = self.limits.header_timeout_seconds
            self._header_timer = self.loop.call_later(timeout, self._headers_late)

    def _headers_arrived(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        timeout = self.limits.header_timeout_seconds
        _SLOW.note(timeout)
        what = f"the request headers did not arrive within {timeout:g} s"
        detail = beyond(what, "header_timeout_seconds", timeout, "send them faster")
        self.transport.write(_raw_response("408 Request Timeout", detail))
        self.transport.close()


# How long an idle kept-alive connection stays open: longer than clients keep theirs (httpx
# 5 s, which then never reuses one the server is closing) and than load balancers' idle
# timeouts (60 s is common), whose reuse of a connection the server just closed is a 502.
KEEP_ALIVE_SECONDS = 75


def uvicorn_config(app: ASGIApp, limits: Limits | None = None, **options: Any) -> uvicorn.Config:
    """The uvicorn settings every agentctl server runs with, holding connections to `limits`
    (the default ones when None); `options` add to them."""
    protocol: type[GatheringHttpProtocol] = GatheringHttpProtocol
    if limits is not None:
        protocol = type("LimitedHttpProtocol", (GatheringHttpProtocol,), {"limits": limits})
        allow_open_files(limits.max_connections)
    settings: dict[str, Any] = {
        "http": protocol,
        "lifespan": "on",
        "log_config": None,
        "access_log": False,
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
        **options,
    }
    return uvicorn.Config(app, **settings)


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
