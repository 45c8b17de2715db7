"""Making the Redis client of a server process from `REDIS_URL`.

The client has bounded timeouts (a dead server fails a request in seconds, not minutes),
TCP keep-alive, a health check of pooled connections idle for a while and a few retries
with back-off on connection errors. `connect` also checks that Redis answers, so a wrong
`REDIS_URL` is reported at start, clearly, instead of on the first request.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from agentctl.errors import RedisUnavailable
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError


def redacted(url: str) -> str:
    """`url` without its password, fit for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


def create_client(
    url: str,
    *,
    socket_timeout: float = 5.0,
    connect_timeout: float = 5.0,
    health_check_interval: int = 30,
    max_connections: int | None = None,
) -> Redis:
    """A client for `url` (`redis://`, `rediss://` or `unix://`); no I/O yet."""
    try:
        return Redis.from_url(
            url,
            decode_responses=False,
            socket_timeout=socket_timeout,
            socket_connect_timeout=connect_timeout,
            socket_keepalive=True,
            health_check_interval=health_check_interval,
            retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), retries=3),
            max_connections=max_connections,
        )
    except ValueError as exc:
        raise RedisUnavailable(
            f"REDIS_URL: {exc} — use a URL like redis://host:6379/0 (rediss:// for TLS)"
        ) from None


async def connect_redis(
    url: str,
    *,
    socket_timeout: float = 5.0,
    connect_timeout: float = 5.0,
    max_connections: int | None = None,
) -> Redis:
    """`create_client(url, ...)` once Redis has answered a PING; raises `RedisUnavailable`
    naming REDIS_URL when it does not."""
    client = create_client(
        url,
        socket_timeout=socket_timeout,
        connect_timeout=connect_timeout,
        max_connections=max_connections,
    )
    try:
        await client.ping()
    except (RedisError, OSError) as exc:
        await client.aclose()
        raise RedisUnavailable(
            f"REDIS_URL: no Redis answers at {redacted(url)} ({exc}) — start Redis there, "
            "or set REDIS_URL to one that runs"
        ) from None
    return client


connect = connect_redis


async def unlink_prefixed(client: Redis, prefix: str, *, batch: int = 500) -> int:
    """Delete every key that starts with `prefix`, `batch` at a time (SCAN, then UNLINK:
    Redis frees their memory in the background); how many there were."""
    pattern = re.sub(r"([\\*?\[\]])", r"\\\1", prefix) + "*"
    deleted = 0
    keys: list[bytes] = []
    async for key in client.scan_iter(match=pattern, count=batch):
        keys.append(key)
        if len(keys) >= batch:
            deleted += await client.unlink(*keys)
            keys = []
    if keys:
        deleted += await client.unlink(*keys)
    return deleted
