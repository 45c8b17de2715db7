"""What one connection may hold of the server, whoever opens it (no sign-in is needed to
open one): uvicorn's protocols with a deadline for every wait a client controls.

- a request's headers: `header_timeout_seconds` from the connection's first byte (or the
  request's), and at most `max_header_kb` of them; past either, 408 or 431 and closed;
- its body: `body_timeout_seconds` from the headers; `limits.BodyLimit` answers 408 to a
  slow body the app reads, and here a body still arriving after its response is cut off;
- between requests: `KEEP_ALIVE_SECONDS` idle, whatever stray bytes arrive meanwhile;
- a client that reads nothing of what the server sends: `write_timeout_seconds`, then
  the connection is dropped with what was left to send;
- a WebSocket handshake whose headers the websockets library refuses (a line over its
  8 KiB, more than 128 headers) is answered 431 (414 for the request line) and closed:
  uvicorn would leave it open, unanswered, forever;
- and `max_connections` open at once; one more is answered 503 at once.

uvicorn writes to the socket on every ASGI `send`: the status line and headers, then each
body chunk, each a system call. A streamed run sends a dozen small pieces, and on a loopback
socket the write itself is the dearest part of a send. Writes made in one turn of the loop
go out together here (`_GatheredWrites`), in one call, at the end of that turn, or at once
when they finish a response: the client is waiting for nothing else.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import websockets.http11
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from agentctl import serde
from agentctl.server.limits import KIB, Limits, Occurrences, beyond

log = logging.getLogger("agentctl.server")
_FULL = Occurrences(
    log, "connection limit reached: %d connections open, new ones are refused with 503 — raise "
    "AGENTCTL_MAX_CONNECTIONS if the clients are legitimate",
)  # fmt: skip
_SLOW = Occurrences(
    log, "closed a connection that sent no complete request headers within %g s "
    "(AGENTCTL_HEADER_TIMEOUT_SECONDS)",
)  # fmt: skip
_STALLED = Occurrences(
    log, "dropped a connection that read nothing of its answer for %g s "
    "(AGENTCTL_WRITE_TIMEOUT_SECONDS)",
)  # fmt: skip

# How long an idle kept-alive connection stays open: longer than clients keep theirs (httpx
# 5 s, which then never reuses one the server is closing) and than load balancers' idle
# timeouts (60 s is common), whose reuse of a connection the server just closed is a 502.
KEEP_ALIVE_SECONDS = 75.0
# How long a connection refused for its headers is read (and what arrives dropped) after
# the answer, so that the client reads the answer before the connection is reset.
LINGER_SECONDS = 2.0


class CutShort(Exception):
    """Raised by a response's body to close its connection before the body is whole, so
    that its client reconnects (to another replica, or to this one started again)."""


class QuietStop(logging.Filter):
    """Drops uvicorn's traceback of a response ended by the server's stop: one `CutShort`,
    or cancelled once the graceful shutdown's time ran out (uvicorn's own line before it
    says how many were)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return error is None or not _ended_by_stop(error)


def _ended_by_stop(error: BaseException) -> bool:
    if isinstance(error, BaseExceptionGroup):
        return all(_ended_by_stop(inner) for inner in error.exceptions)
    return isinstance(error, CutShort | asyncio.CancelledError)


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


class _Deadline:
    """One timer at a time: setting it again replaces the one before."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._timer: asyncio.TimerHandle | None = None
        self.purpose: Callable[[], None] | None = None  # what runs when it passes

    def set(self, seconds: float, when_passed: Callable[[], None]) -> None:
        self.clear()
        self.purpose = when_passed
        self._timer = self._loop.call_later(seconds, self._passed)

    def clear(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self.purpose = None

    def _passed(self) -> None:
        purpose, self._timer, self.purpose = self.purpose, None, None
        if purpose is not None:
            purpose()


def _drop(transport: asyncio.BaseTransport, seconds: float) -> None:
    """Drop a connection whose client has read nothing for `seconds` (a `close` would wait
    for the unsent bytes to go, which is forever)."""
    if not transport.is_closing():
        _STALLED.note(seconds)
        transport.abort()  # type: ignore[attr-defined]


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol on a transport that gathers writes, with the deadlines
    and bounds of `limits` (see the module's docstring)."""

    limits = Limits()
    _deadline: _Deadline
    _stall: _Deadline
    _header_bytes = 0  # of the request whose headers are awaited
    _body_pending = False  # the request's headers arrived, its body not all of it yet
    _body_late = False  # ... and its deadline has passed
    _upgraded = False
    _answered = False  # a refusal was sent: what else arrives is dropped until closed

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if len(self.connections) >= self.limits.max_connections:
            self.transport = transport  # type: ignore[assignment]
            _FULL.note(len(self.connections))
            detail = beyond("the server has too many connections open", "max_connections",
                            self.limits.max_connections, "try again shortly")  # fmt: skip
            transport.write(_raw_response("503 Service Unavailable", detail))  # type: ignore[attr-defined]
            transport.close()
            return
        loop = asyncio.get_running_loop()
        self._deadline = _Deadline(loop)
        self._stall = _Deadline(loop)
        super().connection_made(_GatheredWrites(transport, loop))  # type: ignore[arg-type]
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        if hasattr(self, "_deadline"):  # not refused at once
            self._deadline.clear()
            self._stall.clear()
        super().connection_lost(exc)

    @property
    def _awaiting_headers(self) -> bool:
        return self._deadline.purpose == self._headers_late

    def data_received(self, data: bytes) -> None:
        if self._answered:
            return
        if not self._awaiting_headers:
            super().data_received(data)
            return
        # Headers awaited: feed no more than they may be, then refuse if still incomplete.
        room = self.limits.max_header_kb * KIB - self._header_bytes
        head, rest = data[:room], data[room:]
        self._header_bytes += len(head)
        super().data_received(head)
        if not rest or self._upgraded or self.transport.is_closing():
            return  # (bytes after an upgrade's headers are dropped, as uvicorn does)
        if self._awaiting_headers:
            self._refuse_headers()
            return
        super().data_received(rest)

    # -- the phases of a request -----------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self._awaiting_headers:  # the next request of a kept-alive connection
            self._await_headers()

    def on_headers_complete(self) -> None:
        self._body_pending, self._body_late = True, False
        seconds = self.limits.body_timeout_seconds
        self._deadline.set(seconds, self._body_overdue)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._body_pending = False
        if self._deadline.purpose == self._body_overdue:
            self._deadline.clear()
        if self.cycle is not None and self.cycle.response_complete:
            self._await_request()

    def on_response_complete(self) -> None:
        self.transport.flush()  # type: ignore[attr-defined]
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if self._body_late:  # its answer is sent; the rest of a late body is not awaited
            self.transport.close()
        elif not self._body_pending and not self.pipeline:
            self._await_request()

    def handle_websocket_upgrade(self) -> None:
        self._deadline.clear()
        self._upgraded = True
        self._stall.clear()
        refusal = _handshake_refusal(self.scope["method"], self.url, self.headers)
        if refusal is not None:  # (the request was read whole: nothing resets the answer)
            self.transport.write(refusal)
            self.transport.close()
            return
        super().handle_websocket_upgrade()

    # -- deadlines ---------------------------------------------------------------------------

    def _await_headers(self) -> None:
        self._header_bytes = 0
        self._deadline.set(self.limits.header_timeout_seconds, self._headers_late)

    def _await_request(self) -> None:
        """Idle between requests: closed after `KEEP_ALIVE_SECONDS` unless one begins."""
        self._deadline.set(KEEP_ALIVE_SECONDS, self.transport.close)

    def _headers_late(self) -> None:
        if self.transport.is_closing():
            return
        timeout = self.limits.header_timeout_seconds
        _SLOW.note(timeout)
        what = f"the request headers did not arrive within {timeout:g} s"
        detail = beyond(what, "header_timeout_seconds", timeout, "send them faster")
        self._answer_and_close(_raw_response("408 Request Timeout", detail))

    def _refuse_headers(self) -> None:
        size = self.limits.max_header_kb
        what = f"the request line and headers are larger than {size} KiB"
        detail = beyond(what, "max_header_kb", size, "send fewer or shorter headers")
        self._answer_and_close(_raw_response("431 Request Header Fields Too Large", detail))

    def _answer_and_close(self, response: bytes) -> None:
        """Send `response` and close the connection: our side at once; the client's after
        `LINGER_SECONDS` (or the header timeout, if shorter) of dropping what it still
        sends, unless it closes first. (Closed at once, unread bytes would reset the
        connection, and the client might never read the answer.)"""
        transport = self.transport
        transport.write(response)
        transport.flush()  # type: ignore[attr-defined]
        if not transport.can_write_eof():  # TLS
            transport.close()
            return
        transport.write_eof()
        self._answered = True
        linger = min(LINGER_SECONDS, self.limits.header_timeout_seconds)
        self._deadline.set(linger, transport.close)

    def _body_overdue(self) -> None:
        """The body is late: the app, if it reads it, answers 408 (`BodyLimit`); once the
        response is sent, the connection is closed."""
        self._body_late = True
        if self.cycle is None or self.cycle.response_complete:
            self.transport.close()

    def pause_writing(self) -> None:
        super().pause_writing()
        seconds = self.limits.write_timeout_seconds
        self._stall.set(seconds, lambda: _drop(self.transport, seconds))

    def resume_writing(self) -> None:
        self._stall.clear()
        super().resume_writing()


def _handshake_refusal(method: str, url: bytes, headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """The answer to a WebSocket handshake the websockets library would refuse, which
    uvicorn would never send; None for one it takes. (Its limits are its own environment
    variables, read when it is imported; a line counts with its CRLF.)"""
    longest = websockets.http11.MAX_LINE_LENGTH
    most = websockets.http11.MAX_NUM_HEADERS
    if len(method) + len(url) + len(b"  HTTP/1.1\r\n") > longest:
        what = f"the URL of a WebSocket handshake is longer than {longest} bytes"
        return _raw_response("414 URI Too Long", f"{what} — send a shorter one")
    if len(headers) > most:
        what = f"a WebSocket handshake has {len(headers)} headers, more than {most}"
        setting = "WEBSOCKETS_MAX_NUM_HEADERS"
    elif any(len(name) + len(value) + len(b": \r\n") > longest for name, value in headers):
        what = f"a header line of a WebSocket handshake is longer than {longest} bytes"
        setting = "WEBSOCKETS_MAX_LINE_LENGTH"
    else:
        return None
    detail = f"{what} (set by {setting} on the server) — send fewer or shorter headers"
    return _raw_response("431 Request Header Fields Too Large", detail)


class BoundedWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol (the websockets library's, sans-I/O), which sends the
    answer to a handshake the library refuses and closes the connection, and drops a client
    that reads nothing for `write_timeout_seconds`."""

    limits = Limits()
    _stall: _Deadline | None = None

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self.handshake_initiated and self.conn.handshake_exc is not None:
            # The library refused the handshake and queued its answer; uvicorn sends none.
            self.handshake_complete = self.close_sent = True
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._stall is not None:
            self._stall.clear()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stall is None:
            self._stall = _Deadline(self.loop)
        seconds = self.limits.write_timeout_seconds
        self._stall.set(seconds, lambda: _drop(self.transport, seconds))

    def resume_writing(self) -> None:
        if self._stall is not None:
            self._stall.clear()
        super().resume_writing()


def bounded_protocols(limits: Limits) -> dict[str, Any]:
    """uvicorn's `http` and `ws` settings: the protocols above holding to `limits`."""
    bound = {"limits": limits}
    return {
        "http": type("LimitedHttpProtocol", (BoundedHttpProtocol,), bound),
        "ws": type("LimitedWebSocketProtocol", (BoundedWebSocketProtocol,), bound),
        "ws_max_size": limits.max_body_mb * KIB * KIB,
    }
