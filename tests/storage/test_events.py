"""The event log, on every backend: ids, reads after an id (`Last-Event-ID`), live
subscriptions, and followers (engine/streams.py) that neither miss nor repeat an event
while appends race with them. The Redis log also across instances (processes), across a
killed pub/sub connection, and with its streams' TTL."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from agentctl.engine.streams import PAGE_BYTES, PAGE_EVENTS, follow, mark_start, run_start
from agentctl.engine.wire import END_EVENT
from agentctl.storage.base import Event, EventLog, Run, Storage, event_position
from tests.conftest import eventually


@dataclass
class Backend:
    kind: str
    log: EventLog
    other: EventLog  # another process's log of the same data (the same one for SQLite)
    redis: Any = None  # a client of the Redis server, for inspection
    url: str = ""


@contextlib.asynccontextmanager
async def open_backend(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Backend]:
    if kind == "sqlite":
        from agentctl.storage.sqlite import SqliteStorage

        sqlite = SqliteStorage(tmp_path / "agentctl.db", tmp_path / "store.db")
        try:
            yield Backend("sqlite", sqlite.events, sqlite.events)
        finally:
            await sqlite.close()
        return
    from agentctl.storage.redis import RedisEventLog, connect_redis

    url = request.getfixturevalue("redis_server_url")
    prefix = request.getfixturevalue("redis_prefix")
    async with contextlib.AsyncExitStack() as stack:
        logs = []
        for _ in range(2):  # as two processes: a client and a log each
            client = await connect_redis(url)
            stack.push_async_callback(client.aclose)
            log = RedisEventLog(client, prefix=prefix, ttl_seconds=600)
            stack.push_async_callback(log.close)
            logs.append(log)
        yield Backend("redis", logs[0], logs[1], client, url)


@pytest.fixture(params=["sqlite", "redis"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    async with open_backend(request.param, request, tmp_path) as opened:
        yield opened


@pytest.fixture
async def redis_backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    async with open_backend("redis", request, tmp_path) as opened:
        yield opened


def storage_of(log: EventLog) -> Storage:
    return cast(Storage, SimpleNamespace(events=log))


async def collect(
    log: EventLog, thread: str, *, run_id: str | None, last_event_id: str | None, limit: int
) -> list[Event]:
    """What a follower gets, up to `limit` events or the run's end."""
    got: list[Event] = []
    # `follow` is an async generator (closable), annotated as the iterator its callers need.
    stream = cast(
        AsyncGenerator[Event | None, None],
        follow(storage_of(log), thread, run_id=run_id, last_event_id=last_event_id),
    )
    async with contextlib.aclosing(stream):
        async for event in stream:
            if event is None:
                continue
            got.append(event)
            if len(got) == limit or event.event == END_EVENT:
                break
    return got


async def test_ids_grow_and_reads_start_after_an_id(backend: Backend) -> None:
    log = backend.log
    appended = [await log.append("t", f"run-{i % 2}", "values", b'{"i":%d}' % i) for i in range(6)]
    positions = [event_position(event.id) for event in appended]
    assert positions == sorted(positions)
    assert len(set(positions)) == 6
    assert await log.read("t", after=None) == appended
    assert await log.read("t", after=appended[2].id) == appended[3:]
    assert await log.read("t", after=appended[-1].id) == []
    assert await log.read("t", after=None, run_id="run-1") == appended[1::2]
    assert await log.read("t", after=appended[1].id, run_id="run-0") == appended[2::2]
    assert await log.read("other-thread", after=None) == []


async def test_last_event_id_semantics(backend: Backend) -> None:
    log = backend.log
    appended = [await log.append("t", "r", "values", b"{}") for _ in range(4)]
    appended.append(await log.append("t", "r", END_EVENT, b"{}"))
    ms, seq = event_position(appended[1].id)
    # Any position works, stored or not; `ms` alone is `ms-0`.
    assert await log.read("t", after=f"{ms}-{seq}") == appended[2:]
    assert await log.read("t", after="0") == appended
    assert await log.read("t", after="0-0") == appended
    assert await log.read("t", after=str(event_position(appended[-1].id)[0] + 1)) == []
    with pytest.raises(ValueError, match="invalid literal"):
        await log.read("t", after="not-an-id")
    # A follower replays from the start with `-`, resumes after a given id.
    assert await collect(log, "t", run_id="r", last_event_id="-", limit=99) == appended
    assert (
        await collect(log, "t", run_id="r", last_event_id=appended[2].id, limit=99)
        == (appended[3:])
    )


class Recording:
    """An event log whose page reads are recorded: what a follower asked for and got."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self.pages: list[list[Event]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.log, name)

    async def page(
        self, thread_id: str, *, after: str | None, limit: int, max_bytes: int
    ) -> list[Event]:
        page = await self.log.page(thread_id, after=after, limit=limit, max_bytes=max_bytes)
        self.pages.append(page)
        return page


async def append_many(log: EventLog, thread: str, run_id: str, datas: list[bytes]) -> list[Event]:
    appended: list[Event] = []
    for start in range(0, len(datas), 100):  # concurrent appends go out together
        batch = datas[start : start + 100]
        appended += await asyncio.gather(*(log.append(thread, run_id, "v", d) for d in batch))
    return appended


async def test_pages_are_bounded_in_events_and_in_bytes(backend: Backend) -> None:
    log = backend.log
    small = await append_many(log, "t", "r", [b"%d" % i for i in range(30)])
    large = await append_many(log, "t", "r", [b"x" * 1000] * 3)
    assert await log.page("t", after=None, limit=10, max_bytes=1 << 20) == small[:10]
    assert await log.page("t", after=small[9].id, limit=100, max_bytes=1 << 20) == [
        *small[10:], *large]  # fmt: skip
    # Cut after the event that reaches `max_bytes`: at least one, however large.
    assert await log.page("t", after=small[-1].id, limit=100, max_bytes=1500) == large[:2]
    assert await log.page("t", after=small[-1].id, limit=100, max_bytes=1) == large[:1]
    assert await log.page("t", after=large[-1].id, limit=100, max_bytes=1) == []
    # Only the events' data counts: a replay that stops at a page short of both bounds
    # reads to the end of the log.
    exact = await append_many(log, "u", "r", [b"x" * 999] * 4)
    assert await log.page("u", after=None, limit=100, max_bytes=2000) == exact[:3]
    assert await log.page("u", after=None, limit=100, max_bytes=3000) == exact


async def test_a_replay_holds_one_page_however_long_the_thread(backend: Backend) -> None:
    """A follower replaying a long thread reads it a bounded page at a time (in events and
    in bytes), and gets every event once, in order."""
    datas = [b"%d" % i for i in range(1200)] + [b"x" * 300_000] * 8 + [b"y"] * 300
    appended = await append_many(backend.log, "long", "r", datas)
    recording = Recording(backend.log)
    got = await collect(
        cast(EventLog, recording), "long", run_id=None, last_event_id="-", limit=len(datas)
    )
    assert got == appended
    assert sum(len(page) for page in recording.pages) == len(appended)
    for page in recording.pages:
        assert len(page) <= PAGE_EVENTS
        assert sum(len(event.data) for event in page[:-1]) < PAGE_BYTES


async def test_a_run_is_read_from_where_the_log_stood_when_it_was_created(
    backend: Backend,
) -> None:
    """On a long thread, a run's stream (from its start, a join or a new run's) reads only
    what was appended after the run was created, not the thread's whole log."""
    thread = "long"
    earlier = await append_many(backend.log, thread, "old", [b"%d" % i for i in range(2000)])
    run = Run("new", thread, "assistant")
    await mark_start(storage_of(backend.log), run)
    assert run_start(run) == earlier[-1].id
    follower = asyncio.create_task(follow_run(backend.log, run))  # as a new run's stream
    await asyncio.sleep(0.1)
    events = [await backend.other.append(thread, "new", "v", b"%d" % i) for i in range(5)]
    events.append(await backend.other.append(thread, "new", END_EVENT, b"{}"))
    await backend.other.append(thread, "later", "v", b"another run")
    new_stream, new_pages = await asyncio.wait_for(follower, 5)
    joined, join_pages = await follow_run(backend.log, run)  # a join once it ended
    assert new_stream == joined == events
    assert new_pages + join_pages <= len(events) + 1  # the run's own events, and one more
    empty = Run("first", "new-thread", "assistant")
    await mark_start(storage_of(backend.log), empty)
    assert run_start(empty) is None  # an empty log: from its start


async def follow_run(log: EventLog, run: Run) -> tuple[list[Event], int]:
    """A follower of `run` from its start: what it got, and how many events it read."""
    recording = Recording(log)
    got = await collect_from(cast(EventLog, recording), run)
    return got, sum(len(page) for page in recording.pages)


async def collect_from(log: EventLog, run: Run) -> list[Event]:
    stream = cast(
        AsyncGenerator[Event | None, None],
        follow(storage_of(log), run.thread_id, run_id=run.run_id, last_event_id=None,
               start=run_start(run)),
    )  # fmt: skip
    async with contextlib.aclosing(stream):
        return [event async for event in stream if event is not None]


async def test_an_id_past_the_end_of_the_log_follows_live(backend: Backend) -> None:
    log = backend.log
    assert await log.last_id("t") is None
    stored = [await log.append("t", "r", "values", b"{}") for _ in range(2)]
    assert await log.last_id("t") == stored[-1].id
    ms, _ = event_position(stored[-1].id)
    future = f"{ms + 3_600_000}-0"  # names no event: e.g. another server's id
    follower = asyncio.create_task(collect(log, "t", run_id="r", last_event_id=future, limit=99))
    await asyncio.sleep(0.2)  # the follower has read the log and waits for live events
    live = [await backend.other.append("t", "r", "values", b"{}")]
    live.append(await backend.other.append("t", "r", END_EVENT, b"{}"))
    assert await asyncio.wait_for(follower, 5) == live
    # A real id at the end of the log still means "seen up to here".
    follower = asyncio.create_task(
        collect(log, "t", run_id="r2", last_event_id=live[-1].id, limit=99)
    )
    await asyncio.sleep(0.2)
    later = [await backend.other.append("t", "r2", END_EVENT, b"{}")]
    assert await asyncio.wait_for(follower, 5) == later


async def test_subscription_sees_what_another_process_appends(backend: Backend) -> None:
    subscription = backend.log.subscribe("t")
    quiet = backend.log.subscribe("t-quiet")
    try:
        await backend.log.read("t", after=None)  # as a follower does: the feed is set up
        sent = [await backend.other.append("t", "r", "values", b"%d" % i) for i in range(5)]
        got = [await asyncio.wait_for(subscription.next(), 5) for _ in sent]
        assert got == sent
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(quiet.next(), 0.05)
    finally:
        subscription.close()
        quiet.close()


async def test_concurrent_appends_of_a_thread_keep_their_order(backend: Backend) -> None:
    sent = await asyncio.gather(
        *(backend.log.append("t", "r", "values", b"%d" % i) for i in range(50))
    )
    assert [event.data for event in sent] == [b"%d" % i for i in range(50)]
    assert [event_position(e.id) for e in sent] == sorted(event_position(e.id) for e in sent)
    assert await backend.log.read("t", after=None) == list(sent)


@pytest.mark.parametrize("thread", ["t1", "t2", "t3"])  # a race: more than one try
async def test_followers_miss_nothing_and_repeat_nothing_while_appends_race(
    backend: Backend, thread: str
) -> None:
    """Followers start (and stop) while another process appends, in bursts of concurrent
    appends: each sees a gapless run of the log from where it asked to start."""
    rng = random.Random(thread)
    total = 600

    async def write() -> None:
        written = 0
        while written < total:
            burst = min(rng.randint(1, 8), total - written)
            data = [b"%d" % (written + i) for i in range(burst)]
            await asyncio.gather(*(backend.other.append(thread, "r", "v", d) for d in data))
            written += burst
            await backend.other.append(thread, "noise", "values", b"other run")
            await asyncio.sleep(0)
        await backend.other.append(thread, "r", END_EVENT, b"{}")

    async def follower(delay: float, resume: bool, limit: int) -> tuple[str, list[Event]]:
        await asyncio.sleep(delay)
        start = "-"
        if resume:
            stored = await backend.log.read(thread, after=None, run_id="r")
            if stored:
                start = rng.choice(stored).id
        return start, await collect(
            backend.log, thread, run_id="r", last_event_id=start, limit=limit
        )

    writer = asyncio.create_task(write())
    results = await asyncio.gather(
        *(follower(i * 0.002, i % 2 == 1, rng.choice([5, 20, 10_000])) for i in range(40))
    )
    await writer
    full = await backend.log.read(thread, after=None, run_id="r")
    assert len(full) == total + 1
    for start, got in results:
        begin = 0 if start == "-" else [e.id for e in full].index(start) + 1
        assert got == full[begin : begin + len(got)]
        assert len(got) in (5, 20, len(full) - begin)


async def test_a_quiet_follower_gets_heartbeats_and_one_with_events_none(
    backend: Backend,
) -> None:
    """A follower yields None (a heartbeat) once `heartbeat` seconds pass without an event,
    again after each further quiet `heartbeat`, and none while events keep coming."""
    thread = "quiet"
    got: list[Event | None] = []
    stream = follow(storage_of(backend.log), thread, run_id=None, last_event_id=None, heartbeat=1.0)

    async def read() -> None:
        async for item in stream:
            got.append(item)

    reader = asyncio.create_task(read())
    try:
        for i in range(10):  # 0.1 s of events: no heartbeat among them
            await backend.other.append(thread, "r", "v", b"%d" % i)
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        assert [item.data for item in got if item is not None] == [b"%d" % i for i in range(10)]
        assert None not in got

        async def heartbeats(count: int) -> bool:
            return got.count(None) >= count

        await eventually(lambda: heartbeats(2), what="two heartbeats")  # a second apart
        await backend.other.append(thread, "r", "v", b"after")

        async def last_is_an_event() -> bool:
            return got[-1] is not None

        await eventually(last_is_an_event, what="the event after the heartbeats")
        last = got[-1]
        assert last is not None
        assert last.data == b"after"
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader


async def test_a_follower_ends_when_told_to_stop(backend: Backend) -> None:
    thread, stop = "stopped", asyncio.Event()
    stream = follow(storage_of(backend.log), thread, run_id=None, last_event_id=None, stop=stop)
    got: list[Event | None] = []

    async def read() -> None:
        async for item in stream:
            got.append(item)

    reader = asyncio.create_task(read())
    await backend.other.append(thread, "r", "v", b"one")
    while not got:
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(reader, 5)
    assert [item.data for item in got if item is not None] == [b"one"]


async def test_delete_forgets_a_thread(backend: Backend) -> None:
    kept = await backend.log.append("kept", "r", "values", b"{}")
    await backend.log.append("doomed", "r", "values", b"{}")
    await backend.log.delete("doomed")
    assert await backend.log.read("doomed", after=None) == []
    assert await backend.log.read("kept", after=None) == [kept]
    again = await backend.log.append("doomed", "r", "values", b"{}")
    assert await backend.log.read("doomed", after=None) == [again]


# -- Redis only ----------------------------------------------------------------------------


async def test_streams_expire_after_their_ttl(redis_backend: Backend) -> None:
    from agentctl.storage.redis import RedisEventLog

    log = cast(RedisEventLog, redis_backend.log)
    await log.append("t", "r", "values", b"{}")
    assert 590 <= await redis_backend.redis.ttl(log.key("t")) <= 600


async def test_one_server_subscription_per_thread_and_process(redis_backend: Backend) -> None:
    from agentctl.storage.redis import RedisEventLog

    log = cast(RedisEventLog, redis_backend.log)
    first, second = log.subscribe("t"), log.subscribe("t")

    async def subscribers() -> int:
        [(_, count)] = await redis_backend.redis.pubsub_numsub(log.channel("t"))
        return int(count)

    await until(lambda: subscribers(), 1)
    event = await redis_backend.other.append("t", "r", "values", b"{}")
    assert await asyncio.wait_for(first.next(), 5) == event
    assert await asyncio.wait_for(second.next(), 5) == event
    first.close()
    second.close()
    await until(lambda: subscribers(), 0)


async def test_a_killed_pubsub_connection_loses_no_event(
    redis_backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process (a thread with its own loop) appends while the connection is down
    and coming back: the subscription gets each event once, in order."""
    from agentctl.storage.redis import RedisEventLog

    log = cast(RedisEventLog, redis_backend.log)
    caplog.set_level(logging.WARNING, logger="agentctl.storage")
    subscription = log.subscribe("t")
    await log.read("t", after=None)
    first = await redis_backend.other.append("t", "r", "values", b"before")
    assert await asyncio.wait_for(subscription.next(), 5) == first
    elsewhere = append_elsewhere(redis_backend.url, log.prefix, 0.3)
    writer = threading.Thread(target=asyncio.run, args=(elsewhere,))
    writer.start()
    await asyncio.sleep(0.02)
    await kill_pubsub(redis_backend.redis, f"{log.prefix}:events")
    await asyncio.to_thread(writer.join)
    stored = await log.read("t", after=first.id)
    got = [await asyncio.wait_for(subscription.next(), 5) for _ in stored]
    assert got == stored
    with pytest.raises(TimeoutError):  # and nothing twice
        await asyncio.wait_for(subscription.next(), 0.1)
    # Logged as an outage of Redis, once, and its end.
    assert caplog.text.count("Redis is unavailable") == 1, caplog.text
    assert "Redis is back" in caplog.text
    subscription.close()


async def append_elsewhere(url: str, prefix: str, seconds: float) -> None:
    """Appends to thread `t` in bursts for `seconds`, from a client and log of its own."""
    from agentctl.storage.redis import RedisEventLog, connect_redis

    client = await connect_redis(url)
    log = RedisEventLog(client, prefix=prefix)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        await asyncio.gather(*(log.append("t", "r", "values", b"x") for _ in range(4)))
    await log.close()
    await client.aclose()


async def kill_pubsub(redis: Any, name: str) -> None:
    """Have the server drop the pub/sub connections named `name`."""
    clients = await redis.client_list(_type="pubsub")
    ids = [c["id"] for c in clients if c.get("name") == name]
    assert ids, f"no pub/sub connection named {name}"
    for client_id in ids:
        await redis.client_kill_filter(_id=client_id)


async def until(probe: Any, expected: object, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while (value := await probe()) != expected:
        assert asyncio.get_running_loop().time() < deadline, f"still {value!r}"
        await asyncio.sleep(0.01)


async def test_unreachable_redis_is_reported_naming_redis_url() -> None:
    from agentctl.errors import RedisUnavailable, RuntimeFailure
    from agentctl.storage.redis import connect_redis

    with pytest.raises(RedisUnavailable) as caught:
        await connect_redis("redis://user:s3cret@127.0.0.1:1/0", connect_timeout=1)
    assert isinstance(caught.value, RuntimeFailure)  # Redis being down is not the user's fault
    assert caught.value.status == 503
    assert "REDIS_URL" in str(caught.value)
    assert "s3cret" not in str(caught.value)
    with pytest.raises(RedisUnavailable, match="REDIS_URL"):
        await connect_redis("http://127.0.0.1:6379")


async def test_a_compact_log_reads_back_what_was_appended(backend: Backend) -> None:
    """A run's token metadata and its `values` messages are stored once per thread (SQLite:
    once the run is folded; Redis: as they come), and every read — `read`, `page`, a live
    subscriber on another process, a follower — gets each event's bytes as appended."""
    from agentctl import serde
    from agentctl.storage import compact
    from agentctl.storage.sqlite.events import SqliteEventLog

    log, other = backend.log, backend.other
    if isinstance(log, SqliteEventLog):
        log.fold_after = None  # folded below, by hand
    metadata = {"run_id": "r1", "langgraph_node": "model", "versions": {"x": "y" * 600}}
    messages: list[dict[str, Any]] = []
    datas: list[tuple[str, bytes]] = [("metadata", b'{"run_id":"r1"}')]
    for turn in range(4):
        messages.append({"type": "human", "content": f"question {turn}", "id": f"h{turn}"})
        datas.append(("values", serde.dumps({"messages": messages, "todos": []})))
        for word in ("an", "answer", f"#{turn}"):
            chunk = {"type": "AIMessageChunk", "content": word, "id": f"a{turn}"}
            datas.append(("messages", serde.dumps([chunk, metadata])))
        messages.append({"type": "ai", "content": f"an answer #{turn}", "id": f"a{turn}"})
        datas.append(("values|sub:1", serde.dumps({"messages": messages})))
    datas.append((END_EVENT, b'{"run_id":"r1","status":"success"}'))
    subscription = other.subscribe("t")
    await other.read("t", after=None)  # the subscription's baseline (Redis)
    appended = [await log.append("t", "r1", name, data) for name, data in datas]
    live = [await subscription.next() for _ in appended]
    subscription.close()
    assert live == appended
    if isinstance(log, SqliteEventLog):
        first, end = event_position(appended[0].id), event_position(appended[-1].id)
        assert log.fold("t", "r1", first, end) > 0
        log._parts.clear()  # read from the table, not what this process keeps
        stored = [bytes(r[0]) for r in log.conn.execute("SELECT data FROM events ORDER BY ms, seq")]
    else:
        entries = cast(Any, await backend.redis.xrange(f"{backend.log.prefix}:events:t"))  # type: ignore[attr-defined]
        stored = [bytes(fields[b"data"]) for _, fields in entries]
    assert sum(compact.compacted(data) for data in stored) >= 12  # every token and values
    assert sum(map(len, stored)) < sum(len(data) for _, data in datas) / 2
    assert [(e.event, e.data) for e in await log.read("t", after=None)] == datas
    assert await other.read("t", after=appended[3].id) == appended[4:]
    paged = await log.page("t", after=appended[0].id, limit=5, max_bytes=1 << 20)
    assert paged == appended[1:6]
    followed = await collect(other, "t", run_id="r1", last_event_id="-", limit=100)
    assert followed == appended
    # A page's bound in bytes is on the events as read back, not on their compact form.
    two = len(datas[0][1]) + len(datas[1][1])
    assert await log.page("t", after=None, limit=100, max_bytes=two) == appended[:2]


async def test_redis_values_events_send_what_they_add_and_read_back_exactly(
    redis_backend: Backend,
) -> None:
    """A conversation's values events, appended by two attempts of a run (the first one
    fenced off midway, a refused append and a refused one in a batch among others, whose
    messages the next ones repeat) and by another run on another process: each sends only
    the messages the thread's previous one did not hold, each message is stored once, and
    every event reads back as appended: also after a refused append, after the thread was
    deleted elsewhere (the entry relied on is gone: stored as it was sent), and read by a
    process that never saw them."""
    from agentctl import serde
    from agentctl.storage import compact
    from agentctl.storage.fence import Fence, StaleAttempt
    from agentctl.storage.redis import RedisEventLog

    log, other = cast(RedisEventLog, redis_backend.log), cast(RedisEventLog, redis_backend.other)
    redis = redis_backend.redis
    messages: list[dict[str, Any]] = []

    def fenced(attempt: int) -> Fence:
        async def extend(_: Fence) -> bool:
            return True

        return Fence("r1", attempt, f"w{attempt}", extend=extend, stop=lambda: None)

    def grown(text: str) -> bytes:
        messages.append({"type": "ai", "content": f"{text} " + "x" * 200, "id": text})
        return serde.dumps({"messages": messages})

    def one_more(text: str) -> bytes:  # the conversation with one more message, not kept
        return serde.dumps({"messages": [*messages, {"type": "ai", "content": text, "id": text}]})

    async def appended_by(log: RedisEventLog, run_id: str, count: int, **kw: Any) -> list[Event]:
        start = len(messages)
        return [
            await log.append("t", run_id, "values", grown(f"m{start + i}"), **kw)
            for i in range(count)
        ]

    async def read_back_everywhere(appended: list[Event]) -> None:
        log._parts.clear()
        fresh = RedisEventLog(redis, prefix=log.prefix, ttl_seconds=600)  # parts from Redis
        for reader in (log, other, fresh):
            assert await reader.read("t", after=None) == appended
        followed = await collect(fresh, "t", run_id=None, last_event_id="-", limit=len(appended))
        assert followed == appended
        await fresh.close()

    first, second = fenced(1), fenced(2)
    appended = await appended_by(log, "r1", 30, fence=first)
    # The next one is cut against the last one's conversation: it sends only its message.
    (_, argv), _ = log._argv("t", "r1", "values", one_more("next"), 1, 0)
    assert argv[9] == appended[-1].id
    assert len(argv[10:]) == 2
    await log.supersede("r1", 1)  # the run taken over: attempt 1 is fenced off
    with pytest.raises(StaleAttempt):
        await log.append("t", "r1", "values", grown("stale"), fence=first)
    appended += await appended_by(log, "r1", 20, fence=second)
    # In one batch, a refused append between two of attempt 2's.
    batch = [grown("b1"), grown("stale in a batch"), grown("b2")]
    results = await asyncio.gather(
        log.append("t", "r1", "values", batch[0], fence=second),
        log.append("t", "r1", "values", batch[1], fence=first),
        log.append("t", "r1", "values", batch[2], fence=second),
        return_exceptions=True,
    )
    assert isinstance(results[1], StaleAttempt)
    appended += [results[0], results[2]]  # type: ignore[list-item]
    appended += await appended_by(log, "r1", 10, fence=second)
    await read_back_everywhere(appended)  # the refused ones' messages were sent again
    appended += await appended_by(other, "r2", 20)  # another run, on another process
    appended += await appended_by(log, "r3", 10)
    stored = cast(Any, await redis.xrange(log.key("t")))
    assert all(compact.compacted(fields[b"data"]) for _, fields in stored[1:])  # one message: not
    assert await redis.hlen(f"{log.key('t')}:parts") == len(messages)  # each message once
    assert (
        sum(len(fields[b"data"]) for _, fields in stored) < sum(len(e.data) for e in appended) / 10
    )
    await read_back_everywhere(appended)

    # Deleted elsewhere, then the same conversation goes on: the next one is stored as it
    # was sent (the parts it would rely on are gone), the one after compact again.
    await other.delete("t")
    again = [await log.append("t", "r4", "values", grown(f"n{i}")) for i in range(3)]
    stored = cast(Any, await redis.xrange(log.key("t")))
    assert [compact.compacted(fields[b"data"]) for _, fields in stored] == [False, True, True]
    assert await other.read("t", after=None) == again

    # The parts live as long as the stream: an append that sends none refreshes them too.
    await redis.expire(f"{log.key('t')}:parts", 5)
    await log.append("t", "r4", "updates", b"{}")
    assert await redis.ttl(f"{log.key('t')}:parts") > 500


async def test_runs_stored_before_folds_were_kept_are_folded_after_the_upgrade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database made before `event_folds` existed (its runs' events as streamed, folded
    by no one) is migrated with each ended run in it: they are folded after the start."""
    from agentctl import serde
    from agentctl.storage import compact
    from agentctl.storage.sqlite import SqliteStorage
    from agentctl.storage.sqlite import database as sqlite_database

    before = next(i for i, s in enumerate(sqlite_database.MIGRATIONS) if "event_folds" in s)
    monkeypatch.setattr(sqlite_database, "MIGRATIONS", sqlite_database.MIGRATIONS[:before])
    older = SqliteStorage(tmp_path / "agentctl.db", tmp_path / "store.db", fold_after=None)
    metadata = {"run_id": "r1", "langgraph_node": "model", "versions": {"x": "y" * 600}}
    tokens = [
        ("messages", serde.dumps([{"type": "AIMessageChunk", "content": w}, metadata]))
        for w in ("an", "old", "answer")
    ]
    appended = [
        await older.events.append("t", run, name, data)
        for run in ("r1", "r2")
        for name, data in [*tokens, (END_EVENT, b"{}")]
    ]
    unfinished = await older.events.append("t", "r3", *tokens[0])  # never ended: left alone
    await older.close()
    monkeypatch.undo()

    storage = SqliteStorage(tmp_path / "agentctl.db", tmp_path / "store.db", fold_after=3600)
    try:

        async def folded() -> bool:
            rows = storage.conn.execute("SELECT run_id, data FROM events ORDER BY ms, seq")
            return [compact.compacted(bytes(data)) for _, data in rows] == [
                True, True, True, False, True, True, True, False, False
            ]  # fmt: skip

        await eventually(folded, 10, "the runs of before to be folded")
        assert await storage.events.read("t", after=None) == [*appended, unfinished]
    finally:
        await storage.close()


async def test_sqlite_stores_values_events_compact_as_they_come(tmp_path: Path) -> None:
    """A `values` event, which repeats the whole conversation, is stored compact when it is
    appended, each message written once per thread; a run's tokens wait for its fold. Read
    back, every event is what was appended."""
    from agentctl import serde
    from agentctl.storage import compact

    async with open_backend("sqlite", cast(pytest.FixtureRequest, None), tmp_path) as backend:
        log = backend.log
        metadata = {"run_id": "r1", "langgraph_node": "model", "versions": {"x": "y" * 600}}
        messages: list[dict[str, Any]] = []
        datas: list[tuple[str, bytes]] = []
        for turn in range(20):
            messages.append({"type": "human", "content": f"question {turn}", "id": f"h{turn}"})
            datas.append(("values", serde.dumps({"messages": messages})))
            chunk = {"type": "AIMessageChunk", "content": f"#{turn}", "id": f"a{turn}"}
            datas.append(("messages", serde.dumps([chunk, metadata])))
            messages.append({"type": "ai", "content": f"answer #{turn}", "id": f"a{turn}"})
            datas.append(("values", serde.dumps({"messages": messages})))
        appended = [await log.append("t", "r1", name, data) for name, data in datas]
        assert [(e.event, e.data) for e in appended] == datas  # as sent live
        conn = log.conn  # type: ignore[attr-defined]
        log.db.flush()  # type: ignore[attr-defined]
        stored = [(e, bytes(d)) for e, d in conn.execute("SELECT event, data FROM events")]
        compacted = [compact.compacted(d) for e, d in stored if e == "values"]
        compactable = [compact.encode(e, d) is not None for e, d in datas if e == "values"]
        assert compacted == compactable
        assert sum(compacted) > 30
        assert not any(compact.compacted(d) for e, d in stored if e == "messages")
        (parts,) = conn.execute("SELECT count(*) FROM event_parts").fetchone()
        assert parts == len(messages)  # each message once
        log._parts.clear()  # type: ignore[attr-defined]  # read from the table
        assert [(e.event, e.data) for e in await log.read("t", after=None)] == datas


async def test_sqlite_tokens_reach_the_file_a_page_at_a_time_and_before_other_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Token events wait in memory until their time is up, a thread's fill about a page, or
    another event of the thread comes; the file then always holds the beginning of the
    thread's stream, and a read sees everything appended."""
    import sqlite3

    from agentctl.storage.sqlite import database
    from agentctl.storage.sqlite import events as sqlite_events

    path = tmp_path / "agentctl.db"

    def in_file() -> list[str]:  # what another connection sees: only what is committed
        with contextlib.closing(sqlite3.connect(path)) as other:
            return [name for (name,) in other.execute("SELECT event FROM events ORDER BY ms, seq")]

    async def settled() -> list[str]:  # after the commit of what was handed to the database
        await asyncio.sleep(database.COMMIT_DELAY * 5)
        return in_file()

    token = b'[{"type": "AIMessageChunk", "content": "word"}, {}]'
    async with open_backend("sqlite", cast(pytest.FixtureRequest, None), tmp_path) as backend:
        log = backend.log
        monkeypatch.setattr(sqlite_events, "STAGE_SECONDS", 0.1)  # a token's time is up
        appended = [await log.append("t", "r1", "metadata", b"{}")]
        appended.append(await log.append("t", "r1", "messages", token))
        await eventually(lambda: asyncio.sleep(0, len(in_file()) == 2), what="the late token")

        monkeypatch.setattr(sqlite_events, "STAGE_SECONDS", 60.0)
        appended += [await log.append("t", "r1", "messages", token) for _ in range(3)]
        assert (await settled()).count("messages") == 1  # these wait ...
        appended.append(await log.append("t", "r1", "updates", b"{}"))  # ... for another event
        assert await settled() == [e.event for e in appended]

        big = token.replace(b"word", b"w" * 1000)  # ... or until they fill a page
        appended += [await log.append("t", "r1", "messages", big) for _ in range(4)]
        assert await settled() == [e.event for e in appended]

        appended.append(await log.append("t", "r1", "messages", token))
        assert await log.read("t", after=None) == appended  # a read sees them all
        assert await settled() == [e.event for e in appended]
