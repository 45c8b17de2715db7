"""The event log on Redis Streams: one stream per thread, live fan-out by pub/sub.

A thread's events are the entries of stream `{prefix}:events:{thread_id}` (fields run_id,
event, data); the stream ids (`<ms>-<seq>`) are the event ids, so a client's `Last-Event-ID`
is a stream position. An entry holds the compact form of its event (storage/compact.py: a
token's metadata and a `values` event's messages are kept once per thread, in the hash
`{stream}:parts`), read back exactly as it was sent. One Lua script appends (XADD),
refreshes the stream's TTL and publishes the entry (as it was sent) to the thread's channel
in one round trip, atomically, so the order on the channel is the order in the stream.

A `values` event repeats the whole conversation: it is compacted against the conversation
of the thread's previous one (its *head*, storage/compact.py), and sends only the parts
that one did not hold, so a turn costs what it adds. A head is kept (per process) only
from an append whose answer said it was stored as sent, with its parts; the next append
names that event, and the script stores the event as it was sent instead when that entry
is gone (the thread deleted, expired, or Redis emptied meanwhile), never an entry whose
parts are missing. The parts hash lives as long as its stream: every append refreshes both.

An append waits out an outage of Redis: it is sent again until Redis answers, so a run
goes on where it was and its clients get every event once Redis is back. Appends are
numbered per process and the script skips a number it has already stored for this
process (in the hash `{stream}:writers`), so an append that took effect before the
connection dropped is not stored twice.

Live subscriptions of a process share one pub/sub connection. A thread's feed starts at a
*baseline* — the stream's last id, read when its first local subscription appears — and
from then on delivers every entry after it exactly once, in order: whatever was appended
before the channel's SUBSCRIBE was confirmed (or while the connection was down) is read
from the stream, the rest comes by pub/sub, and ids seen already are dropped. Reads
(`read`, `page`) wait for the baseline of a thread being subscribed, so a follower that
subscribes, then reads, then takes live events with greater ids (engine/streams.py) can
lose none. (A subscriber that never reads may miss what is appended while its baseline is
read: one round trip after `subscribe`.) Followers read a page at a time (XRANGE with
COUNT), so a replay holds one page, however long the thread.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import uuid
from typing import Any, cast

from agentctl.storage import compact
from agentctl.storage.base import Event, event_position
from agentctl.storage.batches import GroupSender, Queued
from agentctl.storage.fence import Fence
from agentctl.storage.outages import LONGEST_DELAY, REDIS, outages, service_down
from agentctl.storage.redis.pubsub import PubSub, stop
from agentctl.storage.subscription import QueueSubscription
from redis.asyncio import Redis
from redis.exceptions import NoScriptError, RedisError, ResponseError

log = logging.getLogger("agentctl.storage")

# KEYS[1] stream, KEYS[2] its writers hash, KEYS[3] the run's fence, KEYS[4] the stream's
# parts; ARGV: run_id, event, data, ttl seconds, channel, writer, number, attempt ("" when
# not fenced), the data to store ("": `data` itself), the id of the entry whose parts it
# also refers to ("" when none: it sends them all), then the parts it sends (digest, bytes,
# ...). The message is "<id> <len(run_id)> <len(event)>\n" + run_id + event + data.
# The fence holds the latest attempt of the run that appended: an earlier attempt's append
# is refused. Returns the entry's id when it was stored as asked, else {id}: stored before
# (this append sent again), or stored as `data` because the entry it relies on is gone.
APPEND = """
local last = redis.call('HGET', KEYS[2], ARGV[6])
if last then
  local number, stored = string.match(last, '^(%d+) (.*)$')
  if tonumber(number) >= tonumber(ARGV[7]) then return {stored} end
end
if ARGV[8] ~= '' then
  local latest = tonumber(redis.call('GET', KEYS[3]) or '0')
  local attempt = tonumber(ARGV[8])
  if latest > attempt then return redis.error_reply('STALE attempt') end
  if latest < attempt then redis.call('SET', KEYS[3], ARGV[8], 'EX', ARGV[4]) end
end
local stored, asked = ARGV[3], true
if ARGV[9] ~= '' then stored = ARGV[9] end
if ARGV[10] ~= '' and (redis.call('EXISTS', KEYS[4]) == 0
    or #redis.call('XRANGE', KEYS[1], ARGV[10], ARGV[10]) == 0) then
  stored, asked = ARGV[3], false
end
if asked then
  for i = 11, #ARGV, 2 do redis.call('HSETNX', KEYS[4], ARGV[i], ARGV[i + 1]) end
end
local id = redis.call('XADD', KEYS[1], '*', 'run_id', ARGV[1], 'event', ARGV[2], 'data', stored)
redis.call('HSET', KEYS[2], ARGV[6], ARGV[7] .. ' ' .. id)
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[4])
redis.call('EXPIRE', KEYS[4], ARGV[4])
redis.call('PUBLISH', ARGV[5], id .. ' ' .. #ARGV[1] .. ' ' .. #ARGV[2] .. '\\n'
  .. ARGV[1] .. ARGV[2] .. ARGV[3])
if asked then return id end
return {id}
"""
APPEND_SHA = hashlib.sha1(APPEND.encode()).hexdigest()
# KEYS[1] a run's fence; ARGV: the first attempt still allowed, ttl seconds.
SUPERSEDE = """
if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
end
"""
# KEYS[1] stream; ARGV: start, count, bytes. Entries from start, read a few at a time, up
# to `count` or to the one whose `data` brings the page to `bytes`: what a page costs Redis
# and the client is bounded in bytes too.
PAGE_OF_ENTRIES = """
local page, size, start = {}, 0, ARGV[1]
local want, most = tonumber(ARGV[2]), tonumber(ARGV[3])
while #page < want do
  local asked = math.min(want - #page, 32)
  local batch = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', asked)
  for _, entry in ipairs(batch) do
    page[#page + 1] = entry
    size = size + #entry[2][6]  -- fields run_id, event, data (as APPEND writes them)
    if size >= most then return page end
  end
  if #batch < asked then return page end
  start = '(' .. batch[#batch][1]
end
return page
"""
PAGE = 1000  # stream entries per XRANGE
Position = tuple[int, int]
Entries = list[tuple[bytes, dict[bytes, bytes]]]
STALE = "STALE attempt"  # the script's error for a refused append
# (stream, writers hash, fence, parts hash), (run_id, event, data, ttl, channel, writer, number,
# attempt, stored data, ...): the APPEND script's keys and arguments
Argv = tuple[tuple[str, str, str, str], tuple[str | bytes | int, ...]]
# thread_id, run_id, event, data, attempt ("" when not fenced), number
Append = tuple[str, str, str, bytes, int | str, int]


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _entry(entry_id: bytes | str, fields: dict[bytes, bytes]) -> Event:
    return Event(
        _text(entry_id), fields[b"run_id"].decode(), fields[b"event"].decode(), fields[b"data"]
    )


def _fields(fields: dict[bytes, bytes] | list[bytes]) -> dict[bytes, bytes]:
    """An entry's fields, from XRANGE (a map) or from a script (a flat list)."""
    if isinstance(fields, dict):
        return fields
    return dict(zip(fields[::2], fields[1::2], strict=True))


def _start(after: str | None) -> str:
    """The XRANGE start of the entries after id `after` (all when None)."""
    return "({}-{}".format(*event_position(after)) if after else "-"


def _message(payload: bytes) -> Event:
    head, _, rest = payload.partition(b"\n")
    entry_id, run_length, event_length = head.split(b" ")
    split, end = int(run_length), int(run_length) + int(event_length)
    return Event(entry_id.decode(), rest[:split].decode(), rest[split:end].decode(), rest[end:])


def _failed(what: str, exc: RedisError) -> None:
    """Log a failed read of a live feed: once per outage when Redis cannot be reached."""
    if service_down(exc):
        outages.down(REDIS, exc)
    else:
        log.warning("%s failed (%s); retrying", what, exc)


class _Feed:
    """The local subscribers of one thread, and how far they have been served."""

    def __init__(self, thread_id: str, key: str, channel: bytes) -> None:
        self.thread_id, self.key, self.channel = thread_id, key, channel
        self.subscribers: set[QueueSubscription] = set()
        self.last: Position | None = None  # the baseline, then the last id delivered
        self.baseline: asyncio.Task[None] | None = None
        self.live = False  # pub/sub messages go straight to subscribers (else to `held`)
        self.held: list[Event] = []
        self.catching_up = False

    def deliver(self, event: Event) -> None:
        position = event_position(event.id)
        if self.last is not None and position > self.last:
            self.last = position
            for subscription in self.subscribers:
                subscription.queue.put_nowait(event)


class RedisEventLog:
    """The `EventLog` of the PostgreSQL + Redis backend; one per process.

    `client` must not decode responses (`create_client` makes one). `close()` stops the
    pub/sub connection; the client stays open (its owner closes it)."""

    def __init__(
        self,
        client: Redis,
        *,
        prefix: str = "agentctl",
        ttl_seconds: int = 7 * 24 * 3600,
        timeout: float = 10.0,
    ) -> None:
        if client.connection_pool.connection_kwargs.get("decode_responses"):
            raise ValueError("RedisEventLog needs a client with decode_responses=False")
        self._client = client
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds
        self._timeout = timeout
        self._feeds: dict[str, _Feed] = {}
        self._by_channel: dict[bytes, _Feed] = {}
        self._writer = uuid.uuid4().hex  # this process's appends, numbered by `_number`
        self._number = 0
        self._appends: GroupSender[Append, Event] = GroupSender(
            self._send_all, what="the event append"
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self._page = client.register_script(PAGE_OF_ENTRIES)
        self._parts = compact.PartCache()
        # The head of the last values event of a thread this process stored as asked, and
        # that event's id.
        self._heads: compact.Heads[tuple[str, compact.Head]] = compact.Heads()
        self._pubsub = PubSub(
            client,
            name=f"{prefix}:events",
            on_message=self._on_message,
            on_confirm=self._on_confirm,
            on_disconnect=self._on_disconnect,
        )

    def key(self, thread_id: str) -> str:
        return f"{self.prefix}:events:{thread_id}"

    def channel(self, thread_id: str) -> bytes:
        return f"{self.prefix}:events:{thread_id}:live".encode()

    # -- appending -------------------------------------------------------------------------

    async def append(
        self, thread_id: str, run_id: str, event: str, data: bytes, *, fence: Fence | None = None
    ) -> Event:
        """Append in one round trip. Appends are sent in call order, those made while
        others are in flight together in one pipeline, so a thread's ids follow that order.
        While Redis cannot be reached, the appends wait and are sent again."""
        self._number += 1
        attempt = "" if fence is None else fence.attempt
        try:
            return await self._appends((thread_id, run_id, event, data, attempt, self._number))
        except ResponseError as exc:
            if fence is not None and str(exc) == STALE:
                raise fence.refused() from None
            raise

    async def _send_all(self, batch: list[Queued[Append, Event]]) -> list[Event | Exception]:
        """Each append's event, or its error; raises when Redis cannot be reached for any of
        them (then the whole batch is sent again: what was stored already is skipped). The
        appends of a batch are compacted against the heads of appends answered before it,
        never against each other's."""
        prepared = [self._argv(*queued.item) for queued in batch]
        results = await self._send([argv for argv, _ in prepared])
        for result in results:
            if isinstance(result, Exception) and service_down(result):
                raise result
        answers: list[Event | Exception] = []
        for queued, result, (_, head) in zip(batch, results, prepared, strict=True):
            thread_id, run_id, event, data, *_ = queued.item
            self._keep_head(thread_id, event, result, head)
            if isinstance(result, Exception):
                answers.append(result)
            else:
                entry_id = result[0] if isinstance(result, list) else result
                answers.append(Event(_text(entry_id), run_id, event, data))
        return answers

    def _argv(
        self, thread_id: str, run_id: str, event: str, data: bytes, attempt: int | str, number: int
    ) -> tuple[Argv, compact.Head | None]:
        """The script's keys and arguments for an append, and its event's head (a values
        event's conversation, which the next one of the thread can be cut against)."""
        channel = self.channel(thread_id)
        key = self.key(thread_id)
        argv: tuple[str | bytes | int, ...] = (
            run_id, event, data, self.ttl_seconds, channel, self._writer, number, attempt
        )  # fmt: skip
        last = self._heads.get(thread_id, event)
        head = last[1] if last is not None else None
        encoded = compact.encode_after(event, data, head)
        if encoded is None:
            argv += (b"", b"")
            new_head = None
        else:
            stored, parts, new_head = encoded
            # The entry whose parts it refers to without sending them: the previous one's,
            # when cut against it.
            relied: str | bytes = b""
            if last is not None and not parts.keys() >= set(compact.needed(stored)):
                relied = last[0]
            argv += (stored, relied, *(item for pair in parts.items() for item in pair))
        keys = (key, f"{key}:writers", self.fence_key(run_id), f"{key}:parts")
        return (keys, argv), new_head

    def _keep_head(
        self, thread_id: str, event: str, result: Any, head: compact.Head | None
    ) -> None:
        """Keep the head of an append answered as stored as asked (its parts are in the
        parts hash) for the thread's next such event. An append refused or failed drops the
        thread's heads: its next values event sends all its parts. (A message event sends
        its metadata part each time: its head only spares parsing it.)"""
        if isinstance(result, Exception):
            self._heads.forget(thread_id)
        elif event.split("|", 1)[0] in ("values", "messages"):
            stored_as_asked = not isinstance(result, list)  # {id} says otherwise (APPEND)
            kept = (_text(result), head) if head is not None and stored_as_asked else None
            self._heads.keep(thread_id, event, kept)

    async def _send(self, batch: list[Argv]) -> list[Any]:
        """The script's answer (an id, or {id}) or the error, for each append of `batch`."""
        if len(batch) == 1:
            keys, argv = batch[0]
            try:
                return [await self._client.evalsha(APPEND_SHA, 4, *keys, *argv)]
            except NoScriptError:
                return [await self._client.eval(APPEND, 4, *keys, *argv)]
            except RedisError as exc:
                return [exc]
        results = await self._pipeline(batch, APPEND_SHA)
        missing = [i for i, result in enumerate(results) if isinstance(result, NoScriptError)]
        if missing:  # the script cache was flushed: EVAL loads it again
            retried = await self._pipeline([batch[i] for i in missing], None)
            for i, result in zip(missing, retried, strict=True):
                results[i] = result
        return results

    async def _pipeline(self, batch: list[Argv], sha: str | None) -> list[Any]:
        async with self._client.pipeline(transaction=False) as pipe:
            for keys, argv in batch:
                if sha is None:
                    pipe.eval(APPEND, 4, *keys, *argv)
                else:
                    pipe.evalsha(sha, 4, *keys, *argv)
            return list(await pipe.execute(raise_on_error=False))

    # -- reading ---------------------------------------------------------------------------

    async def read(
        self, thread_id: str, *, after: str | None, run_id: str | None = None
    ) -> list[Event]:
        await self._after_baseline(thread_id)
        events = await self._range(self.key(thread_id), _start(after))
        if run_id is not None:
            events = [event for event in events if event.run_id == run_id]
        return events

    async def page(
        self, thread_id: str, *, after: str | None, limit: int, max_bytes: int
    ) -> list[Event]:
        await self._after_baseline(thread_id)
        args = (_start(after), limit, max_bytes)
        key = self.key(thread_id)
        entries = cast(Entries, await self._page(keys=[key], args=args))
        events = await self._expanded(key, [_entry(i, _fields(f)) for i, f in entries])
        return compact.bounded(events, max_bytes)

    async def _expanded(self, key: str, events: list[Event]) -> list[Event]:
        """`events` of stream `key` as they were sent: compact ones filled with their parts
        (from this process's cache, else the stream's parts hash)."""
        wanted = compact.all_needed(event.data for event in events)
        if not wanted:
            return events
        found, missing = self._parts.split(key, wanted)
        if missing:
            values = cast(list[bytes | None], await self._client.hmget(f"{key}:parts", missing))
            read = {d: part for d, part in zip(missing, values, strict=True) if part is not None}
            self._parts.keep(key, read)
            found.update(read)
        return [
            Event(e.id, e.run_id, e.event, compact.decode(e.data, found))
            if compact.compacted(e.data)
            else e
            for e in events
        ]

    async def _after_baseline(self, thread_id: str) -> None:
        """Wait for the baseline of a live feed of the thread that is starting, so that what
        it will not deliver is read. While Redis cannot be reached, that is until it is back
        (the feed reads it again meanwhile; followers send heartbeats)."""
        feed = self._feeds.get(thread_id)
        if feed is not None and feed.baseline is not None and feed.last is None:
            await asyncio.wait({feed.baseline})

    async def _range(self, key: str, start: str) -> list[Event]:
        events: list[Event] = []
        while True:
            entries = cast(Entries, await self._client.xrange(key, start, "+", count=PAGE))
            events.extend(_entry(entry_id, fields) for entry_id, fields in entries)
            if len(entries) < PAGE:
                return await self._expanded(key, events)
            start = f"({events[-1].id}"

    def fence_key(self, run_id: str) -> str:
        return f"{self.prefix}:fence:{run_id}"

    async def supersede(self, run_id: str, attempt: int) -> None:
        """Tried once, briefly: what calls it (the renewal of leases) must not wait for
        Redis. Missed, the next attempt's first append raises the fence all the same."""
        key = self.fence_key(run_id)
        try:
            await asyncio.wait_for(
                self._client.eval(SUPERSEDE, 1, key, attempt + 1, self.ttl_seconds), 1.0
            )
        except (RedisError, TimeoutError) as exc:
            if service_down(exc) is None and not isinstance(exc, TimeoutError):
                raise

    async def last_id(self, thread_id: str) -> str | None:
        entries = cast(Entries, await self._client.xrevrange(self.key(thread_id), count=1))
        return _text(entries[0][0]) if entries else None

    async def delete(self, thread_id: str) -> None:
        key = self.key(thread_id)
        await self._client.delete(key, f"{key}:writers", f"{key}:parts")
        self._parts.forget(key)
        self._heads.forget(thread_id)

    # -- live subscriptions ----------------------------------------------------------------

    def subscribe(self, thread_id: str) -> QueueSubscription:
        feed = self._feeds.get(thread_id)
        if feed is None:
            feed = _Feed(thread_id, self.key(thread_id), self.channel(thread_id))
            self._feeds[thread_id] = feed
            self._by_channel[feed.channel] = feed
            feed.baseline = asyncio.create_task(self._fetch_baseline(feed))
            self._pubsub.add(feed.channel)
        subscription = QueueSubscription(functools.partial(self._detach, feed))
        feed.subscribers.add(subscription)
        return subscription

    def _detach(self, feed: _Feed, subscription: QueueSubscription) -> None:
        feed.subscribers.discard(subscription)
        if feed.subscribers or self._feeds.get(feed.thread_id) is not feed:
            return
        del self._feeds[feed.thread_id]
        del self._by_channel[feed.channel]
        self._pubsub.remove(feed.channel)
        if feed.baseline is not None and not feed.baseline.done():
            feed.baseline.cancel()

    def _current(self, feed: _Feed) -> bool:
        return self._feeds.get(feed.thread_id) is feed

    async def _fetch_baseline(self, feed: _Feed) -> None:
        delay = 0.05
        while True:
            try:
                entries = cast(Entries, await self._client.xrevrange(feed.key, count=1))
                break
            except RedisError as exc:
                _failed(f"reading the end of {feed.key}", exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, LONGEST_DELAY)
        outages.up(REDIS)
        feed.last = event_position(_text(entries[0][0])) if entries else (0, 0)
        self._catch_up_if_ready(feed)

    def _on_message(self, channel: bytes, payload: bytes) -> None:
        feed = self._by_channel.get(channel)
        if feed is None:
            return
        event = _message(payload)
        if feed.live:
            feed.deliver(event)
        else:
            feed.held.append(event)

    def _on_confirm(self, channel: bytes) -> None:
        feed = self._by_channel.get(channel)
        if feed is not None:
            self._catch_up_if_ready(feed)

    def _on_disconnect(self) -> None:
        for feed in self._feeds.values():
            feed.live = False

    def _catch_up_if_ready(self, feed: _Feed) -> None:
        if (
            feed.last is not None
            and not feed.live
            and not feed.catching_up
            and self._current(feed)
            and self._pubsub.confirmed(feed.channel)
        ):
            feed.catching_up = True
            task = asyncio.create_task(self._catch_up(feed))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _catch_up(self, feed: _Feed) -> None:
        """Deliver what the stream holds after the feed's position (appended before the
        subscription was confirmed), then the messages held meanwhile, then go live."""
        delay = 0.05
        try:
            while self._current(feed) and self._pubsub.confirmed(feed.channel):
                generation = self._pubsub.generation
                assert feed.last is not None
                try:
                    stored = await self._range(feed.key, "({}-{}".format(*feed.last))
                except RedisError as exc:
                    _failed(f"catching up on {feed.key}", exc)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, LONGEST_DELAY)
                    continue
                outages.up(REDIS)
                for event in stored:
                    feed.deliver(event)
                held, feed.held = feed.held, []
                for event in held:
                    feed.deliver(event)
                if generation == self._pubsub.generation and self._pubsub.confirmed(feed.channel):
                    feed.live = True
                    return
        finally:
            feed.catching_up = False

    async def start(self) -> None:
        """Open the pub/sub connection now (else the first `subscribe` does)."""
        if not await self._pubsub.start(self._timeout):
            log.warning("the Redis pub/sub connection of the event log is not up yet")

    async def close(self) -> None:
        """Finish the appends under way, then stop the live feeds."""
        await self._appends.close(self._timeout)
        await self._pubsub.close()
        baselines = [feed.baseline for feed in self._feeds.values() if feed.baseline]
        await stop([*self._tasks, *baselines])
