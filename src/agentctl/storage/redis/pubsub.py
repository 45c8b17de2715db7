"""One Redis pub/sub connection per owner, multiplexing every channel it listens to.

`PubSub` keeps the set of wanted channels, sends SUBSCRIBE/UNSUBSCRIBE for the difference,
and reads every reply in a single task. It knows which channels the server has confirmed
on the current connection (`confirmed`), so an owner can tell when messages published from
now on will reach it. A dropped or silent connection is replaced with back-off, every wanted
channel subscribed again, and the owner told (`on_disconnect`, then `on_confirm` per channel)
so that it can fetch what was published in between from wherever it is stored. A lost
connection is an outage of Redis, logged once for the process (storage/outages.py) however
many connections and attempts it costs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from agentctl.storage.outages import LONGEST_DELAY, REDIS, outages
from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

log = logging.getLogger("agentctl.storage")

MessageCallback = Callable[[bytes, bytes], None]
ChannelCallback = Callable[[bytes], None]


def _noop_channel(channel: bytes) -> None:
    return None


async def _as_is(reply: Any) -> Any:
    return reply


async def stop(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel `tasks` and wait until they end, cancelling again those still running:
    Python 3.11's `asyncio.wait_for` (under redis-py's writes) can swallow a cancellation."""
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=0.1)
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: ending is all that is wanted here


class PubSub:
    """Subscriptions of one owner (an event log, a bus) on its own Redis connection.

    `add`/`remove` are synchronous and take effect in the background; callbacks run in
    the reader task and must not block."""

    def __init__(
        self,
        client: Redis,
        *,
        name: str,
        on_message: MessageCallback,
        on_confirm: ChannelCallback = _noop_channel,
        on_disconnect: Callable[[], None] = lambda: None,
        ping_interval: float = 5.0,
        min_backoff: float = 0.05,
        max_backoff: float = LONGEST_DELAY,
    ) -> None:
        self.name = name
        self._client = client
        self._on_message = on_message
        self._on_confirm = on_confirm
        self._on_disconnect = on_disconnect
        self._ping_interval = ping_interval
        self._backoff = (min_backoff, max_backoff)
        self._wanted: set[bytes] = set()
        self._sent: set[bytes] = set()  # last command sent for it on this connection: SUBSCRIBE
        self._expect: dict[bytes, deque[bool]] = {}  # replies awaited (True: subscribe)
        self._confirmed: set[bytes] = set()
        self._ready: dict[bytes, asyncio.Event] = {}
        self._conn: AbstractConnection | None = None
        self._lock = asyncio.Lock()  # one sender at a time, so replies come in send order
        self._dirty = False
        self._syncer: asyncio.Task[None] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._closed = False
        self._connected = asyncio.Event()
        self.generation = 0  # connections made so far

    # -- the owner's side ------------------------------------------------------------------

    async def start(self, timeout: float = 5.0) -> bool:
        """Connect now rather than at the first `add`; False if not connected within
        `timeout` (it keeps trying in the background)."""
        self._start()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._connected.wait(), timeout)
        return self._connected.is_set()

    def add(self, channel: bytes) -> None:
        self._wanted.add(channel)
        ready = self._ready.setdefault(channel, asyncio.Event())
        if channel in self._confirmed:
            ready.set()
        self._start()
        self._schedule_sync()

    def remove(self, channel: bytes) -> None:
        self._wanted.discard(channel)
        self._ready.pop(channel, None)
        self._schedule_sync()

    def confirmed(self, channel: bytes) -> bool:
        """The server has confirmed `channel` on the current connection: every message
        published to it from now on will be read."""
        return channel in self._confirmed

    async def wait_confirmed(self, channel: bytes, timeout: float) -> bool:
        ready = self._ready.get(channel)
        if ready is None:
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ready.wait(), timeout)
        return ready.is_set()

    async def close(self) -> None:
        self._closed = True
        await stop([task for task in (self._syncer, self._reader) if task is not None])
        if self._conn is not None:
            await self._conn.disconnect(nowait=True)
            self._conn = None

    # -- sending ---------------------------------------------------------------------------

    def _start(self) -> None:
        if self._reader is None and not self._closed:
            self._reader = asyncio.create_task(self._run(), name=f"redis-pubsub-{self.name}")

    def _schedule_sync(self) -> None:
        self._dirty = True
        if (self._syncer is None or self._syncer.done()) and not self._closed:
            self._syncer = asyncio.create_task(self._sync())

    async def _sync(self) -> None:
        """Send SUBSCRIBE/UNSUBSCRIBE for what changed since the last commands sent."""
        while self._dirty:
            self._dirty = False
            async with self._lock:
                conn = self._conn
                if conn is None or not conn.is_connected:
                    return  # the next connection subscribes everything wanted
                subscribe = sorted(self._wanted - self._sent)
                unsubscribe = sorted(self._sent - self._wanted)
                for channel in subscribe:
                    self._expect.setdefault(channel, deque()).append(True)
                for channel in unsubscribe:
                    self._expect.setdefault(channel, deque()).append(False)
                    self._confirmed.discard(channel)
                self._sent.update(subscribe)
                self._sent.difference_update(unsubscribe)
                try:
                    if subscribe:
                        await conn.send_command("SUBSCRIBE", *subscribe, check_health=False)
                    if unsubscribe:
                        await conn.send_command("UNSUBSCRIBE", *unsubscribe, check_health=False)
                except (RedisError, OSError) as exc:
                    # The reader sees the broken connection too and makes a new one.
                    log.debug("%s: sending to Redis pub/sub failed: %s", self.name, exc)
                    return

    # -- reading ---------------------------------------------------------------------------

    def _connection(self) -> AbstractConnection:
        pool = self._client.connection_pool
        kwargs: dict[str, Any] = {**pool.connection_kwargs, "health_check_interval": 0}
        # Shown by CLIENT LIST (a name has no spaces or control characters).
        kwargs["client_name"] = "".join(c if "!" <= c <= "~" else "_" for c in self.name)
        return pool.connection_class(**kwargs)

    async def _run(self) -> None:
        delay = self._backoff[0]
        while not self._closed:
            conn = self._connection()
            try:
                await conn.connect()  # type: ignore[no-untyped-call]
                # RESP3 delivers messages as pushes; take them as they are (the default
                # handler formats each one for a debug log line).
                set_handler = getattr(conn._parser, "set_pubsub_push_handler", None)
                if set_handler is not None:
                    set_handler(_as_is)
                async with self._lock:
                    self._conn, self.generation = conn, self.generation + 1
                    self._sent.clear()
                    self._expect.clear()
                self._dirty = True
                await self._sync()
                self._connected.set()
                outages.up(REDIS)
                delay = self._backoff[0]
                await self._read(conn)
            except (RedisError, OSError) as exc:
                outages.down(REDIS, exc)
                log.debug("%s: Redis pub/sub connection lost (%s); reconnecting in %.2f s",
                          self.name, exc or type(exc).__name__, delay)  # fmt: skip
            finally:
                self._drop(conn)
                await conn.disconnect(nowait=True)
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._backoff[1])

    def _drop(self, conn: AbstractConnection) -> None:
        if self._conn is not conn:
            return
        self._conn = None
        self._connected.clear()
        self._confirmed.clear()
        for ready in self._ready.values():
            ready.clear()
        if not self._closed:
            self._on_disconnect()

    async def _read(self, conn: AbstractConnection) -> None:
        """Dispatch replies until the connection fails; PING when it is quiet, and give it
        up when a PING is not answered within `ping_interval`."""
        pinged = False
        while True:
            reply = await conn.read_response(timeout=self._ping_interval, push_request=True)
            if reply is None:
                if pinged:
                    raise RedisConnectionError("no answer to PING")
                async with self._lock:
                    await conn.send_command("PING", check_health=False)
                pinged = True
                continue
            pinged = False
            if isinstance(reply, list) and len(reply) >= 2:
                self._handle(reply)

    def _handle(self, reply: list[Any]) -> None:
        kind = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
        channel = reply[1] if isinstance(reply[1], bytes) else str(reply[1]).encode()
        if kind == "message" and len(reply) >= 3:
            try:
                self._on_message(channel, reply[2])
            except Exception:
                log.exception("%s: a Redis pub/sub message could not be handled", self.name)
        elif kind in ("subscribe", "unsubscribe"):
            expected = self._expect.get(channel)
            if expected:
                expected.popleft()
            if not expected:
                self._expect.pop(channel, None)
            # Confirmed only by the reply to the last command sent for the channel.
            if kind == "subscribe" and not expected and channel in self._sent:
                self._confirmed.add(channel)
                ready = self._ready.get(channel)
                if ready is not None:
                    ready.set()
                try:
                    self._on_confirm(channel)
                except Exception:
                    log.exception("%s: handling a Redis subscription failed", self.name)
