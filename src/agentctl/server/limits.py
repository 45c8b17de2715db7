"""What one request may cost the server, and the middleware enforcing the HTTP part of it.

`Limits` holds every bound (each an `AGENTCTL_*` setting, docs/settings.md). `BodyLimit`
answers 413 to a body over `max_body_mb` before it is read whole and 408 to a body that does
not arrive within `body_timeout_seconds`, and hands memory back to the system after a large
one. What a connection may hold (headers, idle time, unread answers, how many are open) is
bounded in `connections.py`; the input and search bounds are checked where those are handled
(`check_messages`, `check_event_size`, `threads.py`); the engine replaces an event over
`max_event_mb` (`engine/wire.py`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentctl import serde
from agentctl.errors import ContentTooLarge
from agentctl.server.heap import release_memory_soon
from agentctl.settings import BY_NAME, parse

log = logging.getLogger("agentctl.server")

KIB = 1024
MIB = KIB * KIB
# A body at least this large is followed by handing freed memory back to the system.
RELEASE_AFTER_BYTES = MIB
# What a run repeats in every message chunk it streams (metadata, tags) may be this
# fraction of the largest event.
REPEATED_SHARE = 64


@dataclass(frozen=True)
class Limits:
    """The bounds of one request; field `x` is the setting `AGENTCTL_X`."""

    max_body_mb: int = 10
    max_event_mb: int = 8
    max_input_messages: int = 1000
    max_search_scan: int = 10_000
    header_timeout_seconds: float = 10.0
    max_header_kb: int = 64
    body_timeout_seconds: float = 60.0
    write_timeout_seconds: float = 60.0
    max_connections: int = 4096

    @classmethod
    def of(cls, settings: Any) -> Limits:
        """The limits of a `Settings` (whose fields have the same names)."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Limits:
        """The limits the environment sets (what `agentctl dev` serves with)."""
        values = {}
        for f in fields(cls):
            setting = BY_NAME[variable(f.name)]
            values[f.name] = parse(setting, env.get(setting.name))
        return cls(**values)


def allow_open_files(connections: int) -> None:
    """Raise this process's soft limit of open files (often 1024) so that `connections`
    client sockets fit beside what the runs open (model and MCP connections, databases);
    up to the hard limit, with a warning naming the fix when that is too low."""
    try:
        import resource
    except ImportError:  # not a Unix
        return
    wanted = 2 * connections + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if raised > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
    if raised < wanted:
        log.warning(
            "this process may open %d files (`ulimit -n`), too few for %d connections: raise "
            "the limit to %d or set AGENTCTL_MAX_CONNECTIONS lower",
            raised,
            connections,
            wanted,
        )


def variable(field: str) -> str:
    """The environment variable of a `Limits` field."""
    return f"AGENTCTL_{field.upper()}"


def beyond(what: str, field: str, limit: object, remedy: str = "send less") -> str:
    """The `detail` of a request over a limit: what, the limit, and how to raise it."""
    return f"{what} (limit {limit}, set by {variable(field)} on the server) — {remedy} or raise it"


def check_messages(limits: Limits, where: str, value: Any) -> None:
    """Refuse (413) a `value` (a run's input, a state update, or a list of them) whose
    `messages` are more than `max_input_messages`."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            check_messages(limits, f"{where}[{i}]", item)
        return
    messages = value.get("messages") if isinstance(value, Mapping) else None
    if isinstance(messages, list) and len(messages) > limits.max_input_messages:
        what = f"{where}.messages has {len(messages)} messages, more than one request may send"
        raise ContentTooLarge(beyond(what, "max_input_messages", limits.max_input_messages))


def check_event_size(limits: Limits, where: str, value: Any, *, repeated: bool = False) -> None:
    """Refuse (413) a `value` (a run's input, a state update's values) whose JSON is larger
    than a streamed event may be; one `repeated` in every message chunk a run streams (its
    metadata and tags) may be 1/64 of that."""
    if value is None:
        return
    most = limits.max_event_mb * MIB // (REPEATED_SHARE if repeated else 1)
    size = len(serde.dumps(value))
    if size > most:
        what = f"{where} is {size / MIB:.2f} MiB, more than "
        what += (
            f"1/{REPEATED_SHARE} of the largest event (it is repeated in every message "
            "chunk the run streams)"
            if repeated
            else "the largest event a run may stream"
        )
        raise ContentTooLarge(beyond(what, "max_event_mb", f"{limits.max_event_mb} MiB"))


class Occurrences:
    """Logs an event that may happen many times a second at most once per `interval`,
    with how often it happened since the last line."""

    def __init__(self, log: logging.Logger, message: str, interval: float = 10.0) -> None:
        self.log = log
        self.message = message
        self.interval = interval
        self.count = 0
        self._next = 0.0

    def note(self, *args: object) -> None:
        self.count += 1
        now = time.monotonic()
        if now >= self._next:
            self.log.warning(self.message + " (%d times in the last %.0f s)", *args,
                             self.count, self.interval)  # fmt: skip
            self.count = 0
            self._next = now + self.interval


def _response(status: int, detail: str) -> tuple[Message, Message]:
    body = serde.dumps({"detail": detail})
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if status == 408:  # a slow client: its connection is closed (a 413's body is drained)
        headers.append((b"connection", b"close"))
    start = {"type": "http.response.start", "status": status, "headers": headers}
    return start, {"type": "http.response.body", "body": body}


class BodyLimit:
    def __init__(self, app: ASGIApp, limits: Limits | None = None) -> None:
        self.app = app
        self.limits = limits = limits or Limits()
        self.max_bytes = limits.max_body_mb * MIB
        size = limits.max_body_mb
        self.too_large = beyond(f"request body is larger than {size} MiB", "max_body_mb", size)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limits, max_bytes, too_large = self.limits, self.max_bytes, self.too_large
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_bytes:
            for message in _response(413, too_large):
                await send(message)
            return
        deadline = asyncio.get_running_loop().time() + limits.body_timeout_seconds
        received = 0
        body_done = False
        refused = False
        started = False

        async def refuse(status: int, detail: str) -> Message:
            # Answer at once (unless the app already did) and tell the app the client is gone.
            nonlocal refused
            refused = True
            if not started:
                for message in _response(status, detail):
                    await send(message)
            return {"type": "http.disconnect"}

        async def limited_receive() -> Message:
            nonlocal received, body_done
            if refused:
                return {"type": "http.disconnect"}
            if body_done:  # e.g. a streaming response waiting for the client to go
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                seconds = limits.body_timeout_seconds
                return await refuse(
                    408,
                    beyond(f"the request body did not arrive within {seconds:g} s",
                           "body_timeout_seconds", seconds, "send it faster"),
                )  # fmt: skip
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
                if received > max_bytes:
                    return await refuse(413, too_large)
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if not refused:  # after a 408 or 413, whatever the app answers is dropped
                started = True
                await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        finally:
            if received >= RELEASE_AFTER_BYTES:
                release_memory_soon()
