"""The storage `agentctl serve` runs on, chosen by its settings."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from agentctl.errors import SettingsError
from agentctl.settings import Settings
from agentctl.storage.base import Storage
from agentctl.storage.outages import REDIS

Close = Callable[[], Awaitable[None]]


async def _nothing() -> None:
    return None


async def open_storage(settings: Settings) -> tuple[Storage, Close]:
    """PostgreSQL + Redis when `DATABASE_URL` is set, else the embedded SQLite database in
    `AGENTCTL_DATA_DIR`. Returns the storage and what closes what it was built on (after
    `storage.close()`)."""
    if settings.database_url is None:
        from agentctl.storage.sqlite import SqliteStorage

        folder = Path(settings.data_dir)
        folder.mkdir(parents=True, exist_ok=True)
        return SqliteStorage(folder / "agentctl.db", folder / "store.db"), _nothing
    if settings.redis_url is None:
        raise SettingsError(
            "DATABASE_URL is set but REDIS_URL is not — replicas on PostgreSQL stream events "
            "and signal each other through Redis: set REDIS_URL (e.g. redis://localhost:6379/0)"
        )
    from agentctl.storage.postgres import PostgresStorage
    from agentctl.storage.redis import connect_redis
    from agentctl.storage.redis.bus import RedisBus
    from agentctl.storage.redis.events import RedisEventLog

    client = await connect_redis(settings.redis_url)
    events = RedisEventLog(
        client, prefix=settings.redis_prefix, ttl_seconds=settings.event_ttl_seconds
    )
    bus = RedisBus(client, prefix=settings.redis_prefix)
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
        )
    except BaseException:
        await close()
        raise
    return storage, close
