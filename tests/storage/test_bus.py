"""The bus, in process (LocalBus) and across processes (RedisBus): every handler of a
topic gets each message once, the publisher's own included; topics are apart; a failing
handler stops no other; a Redis bus whose connection the server kills comes back."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from agentctl.storage.base import Bus, Message
from agentctl.storage.bus import LocalBus
from tests.conftest import eventually


@dataclass
class Buses:
    kind: str
    one: Bus
    two: Bus  # another process's bus (the same one for LocalBus)
    redis: Any = None


@contextlib.asynccontextmanager
async def open_buses(kind: str, request: pytest.FixtureRequest) -> AsyncIterator[Buses]:
    if kind == "local":
        bus = LocalBus()
        yield Buses("local", bus, bus)
        await bus.close()
        return
    from agentctl.storage.redis import RedisBus, connect_redis

    url = request.getfixturevalue("redis_server_url")
    prefix = request.getfixturevalue("redis_prefix")
    async with contextlib.AsyncExitStack() as stack:
        buses: list[Bus] = []
        for _ in range(2):  # as two processes: a client and a bus each
            client = await connect_redis(url)
            stack.push_async_callback(client.aclose)
            redis_bus = RedisBus(client, prefix=prefix)
            stack.push_async_callback(redis_bus.close)
            buses.append(redis_bus)
        yield Buses("redis", buses[0], buses[1], client)


@pytest.fixture(params=["local", "redis"])
async def buses(request: pytest.FixtureRequest) -> AsyncIterator[Buses]:
    async with open_buses(request.param, request) as opened:
        yield opened


@pytest.fixture
async def redis_buses(request: pytest.FixtureRequest) -> AsyncIterator[Buses]:
    async with open_buses("redis", request) as opened:
        yield opened


@dataclass
class Inbox:
    """A handler that keeps what it gets."""

    got: list[Message] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, message: Message) -> None:
        self.got.append(message)
        self.arrived.set()

    async def wait_for(self, count: int, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while len(self.got) < count:
                self.arrived.clear()
                await self.arrived.wait()


async def ready(bus: Bus, *topics: str) -> None:
    """Until a Redis bus hears `topics` (a subscription takes a round trip to confirm)."""
    confirmed: Callable[[str], Awaitable[bool]] | None = getattr(bus, "ready", None)
    if confirmed is None:  # LocalBus: at once
        return
    for topic in topics:
        assert await confirmed(topic)


async def settle() -> None:
    """Time for a stray (duplicate or misrouted) delivery to show up."""
    await asyncio.sleep(0.05)


async def test_every_handler_of_a_topic_gets_each_message_once(buses: Buses) -> None:
    first, second, elsewhere = Inbox(), Inbox(), Inbox()
    buses.one.subscribe("wake", first)
    buses.one.subscribe("wake", second)
    buses.two.subscribe("wake", elsewhere)
    await ready(buses.one, "wake")
    await ready(buses.two, "wake")
    await buses.one.publish("wake", {"n": 1})  # the publisher's own handlers hear it too
    await buses.two.publish("wake", {"n": 2})
    for inbox in (first, second, elsewhere):
        await inbox.wait_for(2)
    await settle()
    for inbox in (first, second, elsewhere):
        assert sorted(m["n"] for m in inbox.got) == [1, 2]


async def test_a_publisher_hears_itself_right_after_subscribing(buses: Buses) -> None:
    inbox = Inbox()
    buses.one.subscribe("deploy", inbox)
    await buses.one.publish("deploy", {"number": 1})
    await inbox.wait_for(1)
    await settle()
    assert inbox.got == [{"number": 1}]


async def test_topics_are_apart(buses: Buses) -> None:
    wake, cancel = Inbox(), Inbox()
    buses.two.subscribe("wake", wake)
    buses.two.subscribe("cancel", cancel)
    await ready(buses.two, "wake", "cancel")
    await buses.one.publish("cancel", {"run_id": "r", "action": "interrupt"})
    await buses.one.publish("deploy", {"number": 3})  # nobody listens: nothing happens
    await cancel.wait_for(1)
    await settle()
    assert cancel.got == [{"run_id": "r", "action": "interrupt"}]
    assert wake.got == []


async def test_a_failing_handler_stops_no_other(
    buses: Buses, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="agentctl.storage")

    async def broken(message: Message) -> None:
        raise RuntimeError("handler bug")

    healthy = Inbox()
    buses.one.subscribe("wake", broken)
    buses.one.subscribe("wake", healthy)
    await ready(buses.one, "wake")
    await buses.two.publish("wake", {"n": 1})
    await buses.two.publish("wake", {"n": 2})
    await healthy.wait_for(2)
    await settle()
    assert [m["n"] for m in healthy.got] == [1, 2]
    assert "a handler of bus topic 'wake' failed" in caplog.text
    assert "handler bug" in caplog.text


async def test_a_redis_bus_comes_back_after_its_connection_is_killed(
    redis_buses: Buses, caplog: pytest.LogCaptureFixture
) -> None:
    from agentctl.storage.redis import RedisBus

    caplog.set_level(logging.WARNING, logger="agentctl.storage")
    inbox = Inbox()
    redis_buses.one.subscribe("cancel", inbox)
    await ready(redis_buses.one, "cancel")
    await redis_buses.two.publish("cancel", {"n": 0})
    await inbox.wait_for(1)

    name = f"{cast(RedisBus, redis_buses.one).prefix}:bus"  # its pub/sub connection
    clients = await redis_buses.redis.client_list(_type="pubsub")
    ids = [c["id"] for c in clients if c.get("name") == name]
    assert ids
    for client_id in ids:
        await redis_buses.redis.client_kill_filter(_id=client_id)

    # Messages published while it is down may be lost (best effort); soon they flow again.
    async def delivered(n: int) -> bool:
        await redis_buses.two.publish("cancel", {"n": n})
        with contextlib.suppress(TimeoutError):
            await inbox.wait_for(2, timeout=0.2)
        return any(m["n"] == n for m in inbox.got)

    for n in range(1, 30):
        if await delivered(n):
            break
    else:
        pytest.fail("no message arrived after the reconnection")
    assert "Redis is unavailable" in caplog.text  # the lost connection, logged as an outage


async def test_messages_are_json(redis_buses: Buses) -> None:
    """What goes through Redis is the JSON of the message (other tools may listen)."""
    from agentctl.storage.redis import RedisBus

    raw: list[bytes] = []
    pubsub = redis_buses.redis.pubsub()
    channel = cast(RedisBus, redis_buses.one).channel("deploy")
    await pubsub.subscribe(channel)
    await pubsub.get_message(timeout=1)  # the confirmation
    await redis_buses.one.publish("deploy", {"number": 7})
    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=2)
    raw.append(message["data"])
    await pubsub.aclose()
    assert raw == [b'{"number":7}']


async def test_members_are_those_announced_and_not_expired_nor_withdrawn(buses: Buses) -> None:
    await buses.one.announce("a", {"agents": {"x": 1}}, ttl=60)
    await buses.two.announce("b", {"agents": {}}, ttl=0.3)  # then it dies: no renewal
    assert await buses.two.members() == {"a": {"agents": {"x": 1}}, "b": {"agents": {}}}
    await buses.one.announce("a", {"agents": {"x": 2}}, ttl=60)  # renewed, with news

    async def expired() -> dict[str, Message] | None:
        members = await buses.one.members()
        return None if "b" in members else members

    assert await eventually(expired, 10, "b to expire") == {"a": {"agents": {"x": 2}}}
    await buses.two.withdraw("a")
    assert await buses.one.members() == {}
