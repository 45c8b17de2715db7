"""The Redis half of the production backend: event streams, the bus, the client."""

from __future__ import annotations

from agentctl.storage.redis.bus import RedisBus
from agentctl.storage.redis.client import (
    connect,
    connect_redis,
    create_client,
    redacted,
)
from agentctl.storage.redis.events import RedisEventLog

__all__ = [
    "RedisBus",
    "RedisEventLog",
    "connect",
    "connect_redis",
    "create_client",
    "redacted",
]
