"""Every storage backend, for the conformance suite: the embedded SQLite one on temporary
files, and PostgreSQL (a fresh database per test) with the Redis event log and bus."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from agentctl.storage.base import Storage
from agentctl.storage.postgres import PostgresStorage
from agentctl.storage.redis import RedisBus, RedisEventLog, connect_redis
from agentctl.storage.sqlite import SqliteStorage

OpenPostgres = Callable[[str], Awaitable[PostgresStorage]]


@contextlib.asynccontextmanager
async def postgres_opener(request: pytest.FixtureRequest) -> AsyncIterator[OpenPostgres]:
    """Opens `PostgresStorage`s as replicas would, each with its own pool, Redis client,
    event log and bus (wired as `storage/open.py` does), and closes them all on exit."""
    async with contextlib.AsyncExitStack() as stack:

        async def open_one(database_url: str) -> PostgresStorage:
            # Fetched here, not on entry: a test's SQLite twin enters this too.
            redis_url = request.getfixturevalue("redis_server_url")
            prefix = request.getfixturevalue("redis_prefix")
            client = await connect_redis(redis_url)
            stack.push_async_callback(client.aclose)
            events = RedisEventLog(client, prefix=prefix)
            stack.push_async_callback(events.close)
            bus = RedisBus(client, prefix=prefix)
            stack.push_async_callback(bus.close)
            await events.start()
            await bus.start()
            storage = await PostgresStorage.open(database_url, events=events, bus=bus, pool_size=8)
            stack.push_async_callback(storage.close)  # first: the storage, then its helpers
            return storage

        yield open_one


@pytest.fixture
async def open_postgres(request: pytest.FixtureRequest) -> AsyncIterator[OpenPostgres]:
    """Opens `PostgresStorage`s on a database; request `database_url` before this fixture,
    so that the database is dropped after they are closed."""
    async with postgres_opener(request) as open_one:
        yield open_one


@pytest.fixture(params=["sqlite", "postgres"])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Storage]:
    if request.param == "sqlite":
        sqlite = SqliteStorage(tmp_path / "agentctl.db", tmp_path / "store.db")
        yield sqlite
        await sqlite.close()
    else:
        database_url = request.getfixturevalue("database_url")
        async with postgres_opener(request) as open_one:
            yield await open_one(database_url)
