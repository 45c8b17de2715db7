"""The HTTP server under the app: uvicorn, with the protocols of `connections.py` (writes
gathered per turn of the event loop; deadlines and bounds for what a client may hold), a
listening socket whose errors name the port, and a server that says when it started.

uvicorn itself waits for a request's headers as long as the client likes, keeps a
WebSocket handshake it cannot parse open forever, and accepts any number of connections: a
few thousand clients trickling bytes would hold a replica.
"""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from agentctl.errors import PortInUseError, UserError
from agentctl.server.connections import KEEP_ALIVE_SECONDS, QuietStop, bounded_protocols
from agentctl.server.limits import Limits, allow_open_files


def uvicorn_config(app: ASGIApp, limits: Limits | None = None, **options: Any) -> uvicorn.Config:
    """The uvicorn settings every agentctl server runs with, holding connections to `limits`
    (the default ones when None); `options` add to them."""
    if limits is not None:
        allow_open_files(limits.max_connections)
    errors = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, QuietStop) for f in errors.filters):
        errors.addFilter(QuietStop())
    settings: dict[str, Any] = {
        **bounded_protocols(limits or Limits()),
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
