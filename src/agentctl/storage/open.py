"""The storage `agentctl serve` runs on, chosen by its settings, in a namespace or the
default one (`storage/namespace.py`); and the deletion of a namespace."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from agentctl.errors import SettingsError, Unprocessable
from agentctl.settings import Settings
from agentctl.storage.base import Storage
from agentctl.storage.namespace import Namespace
from agentctl.storage.outages import REDIS

Close = Callable[[], Awaitable[None]]


async def _nothing() -> None:
    return None


async def open_storage(settings: Settings, namespace: str | None = None) -> tuple[Storage, Close]:
    """PostgreSQL + Redis when `DATABASE_URL` is set, else the embedded SQLite database in
    `AGENTCTL_DATA_DIR`. Returns the storage and what closes what it was built on (after
    `storage.close()`).

    With a `namespace` (an agent's name), the storage sees only that namespace's data, and
    none of it is visible from another: its own PostgreSQL schema (created with its tables
    if missing), Redis keys and channels, or SQLite files. None is the storage of before
    namespaces, data included."""
    space = None if namespace is None else Namespace.of(namespace)
    if settings.database_url is None:
        from agentctl.storage.sqlite import SqliteStorage

        folder = _folder(settings, space)
        folder.mkdir(parents=True, exist_ok=True)
        embedded = SqliteStorage(
            folder / "agentctl.db", folder / "store.db", fold_after=settings.event_fold_seconds
        )
        return embedded, _nothing
    redis_url = _redis_url(settings)
    from agentctl.storage.postgres import PostgresStorage
    from agentctl.storage.redis import connect_redis
    from agentctl.storage.redis.bus import RedisBus
    from agentctl.storage.redis.events import RedisEventLog

    prefix = _redis_prefix(settings, space)
    client = await connect_redis(redis_url)
    events = RedisEventLog(client, prefix=prefix, ttl_seconds=settings.event_ttl_seconds)
    bus = RedisBus(client, prefix=prefix)
    await events.start()
    await bus.start()

    async def close() -> None:
        await bus.close()
        await events.close()
        await client.aclose()

    try:
        storage = await PostgresStorage.open(
            settings.database_url,
            events=events,
            bus=bus,
            pool_size=settings.db_pool_size,
            probes={REDIS: client.ping},
            schema=None if space is None else space.schema,
        )
    except BaseException:
        await close()
        raise
    return storage, close


@dataclass(frozen=True)
class Dropped:
    """What `drop_namespace` deleted."""

    schema: str | None  # the PostgreSQL schema, if there was one
    redis_keys: int  # how many Redis keys (event streams and their bookkeeping)
    folder: Path | None  # the namespace's folder, if there was one


async def drop_namespace(settings: Settings, namespace: str | None) -> Dropped:
    """Delete every record of `namespace`: its PostgreSQL schema and all in it, its Redis
    keys, its folder under `AGENTCTL_DATA_DIR` (its SQLite files). Close its storages
    first, on every replica. Refuses the default namespace (None), which is never
    dropped."""
    if namespace is None:
        raise Unprocessable("the default storage namespace cannot be dropped: name an agent")
    space = Namespace.of(namespace)
    schema: str | None = None
    keys = 0
    if settings.database_url is not None:
        from agentctl.storage.postgres.database import drop_schema
        from agentctl.storage.redis.client import connect_redis, unlink_prefixed

        if await drop_schema(settings.database_url, space.schema):
            schema = space.schema
        client = await connect_redis(_redis_url(settings))
        try:
            keys = await unlink_prefixed(client, _redis_prefix(settings, space) + ":")
        finally:
            await client.aclose()
    folder = _folder(settings, space)
    removed = folder.exists()
    if removed:
        await asyncio.to_thread(shutil.rmtree, folder)
    return Dropped(schema, keys, folder if removed else None)


def _folder(settings: Settings, space: Namespace | None) -> Path:
    data_dir = Path(settings.data_dir)
    return data_dir if space is None else space.folder(data_dir)


def _redis_prefix(settings: Settings, space: Namespace | None) -> str:
    return settings.redis_prefix if space is None else space.redis_prefix(settings.redis_prefix)


def _redis_url(settings: Settings) -> str:
    if settings.redis_url is None:
        raise SettingsError(
            "DATABASE_URL is set but REDIS_URL is not — replicas on PostgreSQL stream events "
            "and signal each other through Redis: set REDIS_URL (e.g. redis://localhost:6379/0)"
        )
    return settings.redis_url
