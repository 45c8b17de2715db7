"""Serving an ASGI app on a loopback port in a background thread, for tests and offline use.

`serve(app)` is a context manager yielding the port (`serve_built(build)` for an app that
needs to know its own port: `build(port)` makes it once the port is bound); `LoopbackServer` is
a base class for objects that serve their own `app()` while entered; `Startable` is what makes
`with` start and stop a server.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from types import FrameType, TracebackType
from typing import Any, Self

import uvicorn

__all__ = ["LoopbackServer", "Startable", "StopSignals", "serve", "serve_built"]


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopSignals:
    """Told when the process gets SIGTERM or SIGINT (Ctrl-C), from its creation on: a
    command serving in background threads waits on it. The handler only writes a byte to a
    pipe: a signal landing while the main thread holds a lock (as `threading.Event.set` and
    `wait` do) must not take it again, or a second signal would deadlock the process."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Told once is enough: the next ones are ignored, so that a storm of them cannot
        # nest this handler in itself.
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        os.write(self._write, b"\0")

    def wait(self, timeout: float) -> bool:
        """Whether a stop signal came (waiting up to `timeout` seconds for one)."""
        readable, _, _ = select.select([self._read], [], [], timeout)
        return bool(readable)


@contextmanager
def serve(app: Any, port: int = 0) -> Iterator[int]:
    """Serve an ASGI app on 127.0.0.1 and `port` (0: a free one), in a thread; yields the
    port. Raises OSError when the port is taken."""
    with serve_built(lambda bound: app, port) as bound:
        yield bound


@contextmanager
def serve_built(build: Callable[[int], Any], port: int = 0) -> Iterator[int]:
    """Like `serve`, for an app that needs its own port (to name its URLs): binds `port` (0: a
    free one), then serves `build(port)`; yields the port."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    port = sock.getsockname()[1]
    try:
        app = build(port)
    except BaseException:
        sock.close()
        raise
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.005)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


class Startable(ABC):
    """Started on entering a `with` block, stopped on leaving it."""

    @abstractmethod
    def start(self) -> Self:
        """Start serving."""

    @abstractmethod
    def stop(self) -> None:
        """Stop serving; safe to call twice."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class LoopbackServer(Startable):
    """Serves `app()` on 127.0.0.1 while entered (or between `start` and `stop`)."""

    def __init__(self) -> None:
        self.port: int | None = None
        self._stack: ExitStack | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``; only while serving."""
        if self.port is None:
            raise RuntimeError("not serving: use `with server:` or call start() first")
        return f"http://127.0.0.1:{self.port}"

    @abstractmethod
    def app(self) -> Any:
        """The ASGI app to serve."""

    def start(self, port: int = 0) -> Self:
        """Serve on `port` (0: a free one); raises OSError when it is taken."""
        if self._stack is None:
            stack = ExitStack()
            self.port = stack.enter_context(serve(self.app(), port))
            self._stack = stack
        return self

    def stop(self) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None
            self.port = None
