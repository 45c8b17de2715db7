"""The bus across replicas: Redis pub/sub on channels `{prefix}:bus:{topic}`; and who is
there: each member's state in a key `{prefix}:member:{member}` that expires unless renewed,
the members' names in the set `{prefix}:members`.

Every process, the publishing one included, gets each message once: its own pub/sub
connection receives what it published, like everybody else's. Delivery is best effort, as
the `Bus` protocol allows: a process whose connection is down misses what is published
meanwhile, and a publish that cannot reach Redis is not raised (the outage is logged once).
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict

from agentctl import serde
from agentctl.storage.base import Handler, Message
from agentctl.storage.bus import deliver
from agentctl.storage.outages import REDIS, outages, service_down
from agentctl.storage.redis.pubsub import PubSub, stop
from redis.asyncio import Redis
from redis.exceptions import RedisError

log = logging.getLogger("agentctl.storage")


class RedisBus:
    """The `Bus` of the PostgreSQL + Redis backend; one per process.

    Subscribing starts one pub/sub connection and its reader task; `close()` stops them
    and the handlers still running. The client stays open (its owner closes it)."""

    def __init__(self, client: Redis, *, prefix: str = "agentctl", timeout: float = 5.0) -> None:
        self._client = client
        self.prefix = prefix
        self._timeout = timeout
        self._handlers: defaultdict[str, list[Handler]] = defaultdict(list)
        self._topics: dict[bytes, str] = {}
        self._heard: set[str] = set()  # topics whose subscription was confirmed once
        self._tasks: set[asyncio.Task[None]] = set()
        self._pubsub = PubSub(client, name=f"{prefix}:bus", on_message=self._on_message)

    def channel(self, topic: str) -> bytes:
        return f"{self.prefix}:bus:{topic}".encode()

    async def publish(self, topic: str, message: Message) -> None:
        channel = self.channel(topic)
        # Our own handlers subscribed just now: wait for the subscription, so that they hear
        # this message too. (Not while a lost connection comes back: best effort.)
        if (
            topic in self._handlers
            and topic not in self._heard
            and await self._pubsub.wait_confirmed(channel, self._timeout)
        ):
            self._heard.add(topic)
        try:
            await self._client.publish(channel, serde.dumps(message))
        except RedisError as exc:
            if service_down(exc):
                outages.down(REDIS, exc)  # logged once per outage
            else:
                log.warning("publishing on bus topic %r failed: %s", topic, exc)

    def subscribe(self, topic: str, handler: Handler) -> None:
        channel = self.channel(topic)
        self._handlers[topic].append(handler)
        self._topics[channel] = topic
        self._pubsub.add(channel)

    async def announce(self, member: str, state: Message, ttl: float) -> None:
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.set(self._member_key(member), serde.dumps(state), px=max(1, int(ttl * 1000)))
            pipe.sadd(self._members_key, member)
            await pipe.execute()

    async def members(self) -> dict[str, Message]:
        found = await self._client.smembers(self._members_key)
        names = sorted(name.decode() if isinstance(name, bytes) else name for name in found)
        if not names:
            return {}
        states = await self._client.mget([self._member_key(name) for name in names])
        expired = [name for name, state in zip(names, states, strict=True) if state is None]
        if expired:  # a member renewing meanwhile is back in the set at its next renewal
            await self._client.srem(self._members_key, *expired)
        return {
            name: serde.loads(state)
            for name, state in zip(names, states, strict=True)
            if state is not None
        }

    async def withdraw(self, member: str) -> None:
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.delete(self._member_key(member))
            pipe.srem(self._members_key, member)
            await pipe.execute()

    @property
    def _members_key(self) -> str:
        return f"{self.prefix}:members"

    def _member_key(self, member: str) -> str:
        return f"{self.prefix}:member:{member}"

    async def ready(self, topic: str) -> bool:
        """Wait (up to the bus's timeout) until messages on `topic` published from now on
        reach this process's handlers; False if Redis has not confirmed it by then."""
        return await self._pubsub.wait_confirmed(self.channel(topic), self._timeout)

    def _on_message(self, channel: bytes, payload: bytes) -> None:
        topic = self._topics.get(channel)
        if topic is None:
            return
        try:
            message = serde.loads(payload)
        except ValueError:
            log.warning("bus topic %r: ignoring a message that is not JSON", topic)
            return
        for handler in self._handlers[topic]:
            task = asyncio.create_task(deliver(handler, topic, message))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def start(self) -> None:
        """Open the pub/sub connection now (else the first `subscribe` does)."""
        if not await self._pubsub.start(self._timeout):
            log.warning("the Redis pub/sub connection of the bus is not up yet")

    async def close(self) -> None:
        await self._pubsub.close()
        await stop(list(self._tasks))
