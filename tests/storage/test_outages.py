"""Telling an outage from any other failure, waiting one out, and an event append sent
again after a dropped connection being stored once."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest
import redis.exceptions
from psycopg import errors
from redis.asyncio import Redis

from agentctl.storage.outages import POSTGRES, REDIS, ride_out, service_down
from agentctl.storage.redis import RedisEventLog, create_client


def test_an_outage_is_told_from_other_failures() -> None:
    refused = psycopg.OperationalError("connection failed: Connection refused")
    assert service_down(refused) == POSTGRES
    assert service_down(errors.AdminShutdown("terminating connection")) == POSTGRES
    assert service_down(redis.exceptions.ConnectionError("refused")) == REDIS
    assert service_down(errors.DeadlockDetected("deadlock detected")) is None
    assert service_down(errors.UniqueViolation("duplicate key")) is None
    assert service_down(ValueError("bad")) is None
    wrapped = RuntimeError("the checkpoint could not be saved")
    wrapped.__cause__ = refused  # wrapped, as libraries do
    assert service_down(wrapped) == POSTGRES


async def test_ride_out_retries_an_outage_and_raises_anything_else() -> None:
    calls = 0

    async def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise redis.exceptions.ConnectionError("Connection refused")
        return "written"

    assert await ride_out(flaky) == "written"
    assert calls == 3

    async def broken() -> None:
        raise ValueError("not an outage")

    with pytest.raises(ValueError, match="not an outage"):
        await ride_out(broken)


@pytest.fixture
async def client(redis_server_url: str) -> AsyncIterator[Redis]:
    client = create_client(redis_server_url)
    yield client
    await client.aclose()


async def test_an_append_sent_again_is_stored_once(client: Redis, redis_prefix: str) -> None:
    log = RedisEventLog(client, prefix=redis_prefix)
    first = await log.append("thread", "run", "values", b"{}")
    # The same append sent again, as after a connection that dropped before the answer.
    argv, _ = log._argv("thread", "run", "values", b"{}", "", log._number)
    again = await log._send([argv])
    assert again == [[first.id.encode()]]  # stored before: not again
    second = await log.append("thread", "run", "values", b"{}")
    assert [event.id for event in await log.read("thread", after=None)] == [first.id, second.id]
    await log.delete("thread")
    assert await client.exists(log.key("thread"), f"{log.key('thread')}:writers") == 0
    await log.close()
