"""Outages of the backing services: telling one from any other failure, and waiting it out.

PostgreSQL or Redis going away is a normal event, not a failure of the run or the request
in flight: a write that could not be made is made again once the service is back (every
write retried here is idempotent), and a request the server cannot carry out meanwhile is
answered 503 with `Retry-After` (server/errors.py). Each outage is logged once when it is
first seen and once when the service is back.

The embedded database's disk filling up is such an outage too (`disk(folder)` names it):
storage/sqlite/database.py keeps what could not be committed and raises `DiskUnavailable`
for what it refuses meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from agentctl.errors import DiskUnavailable

log = logging.getLogger("agentctl.storage")

POSTGRES = "PostgreSQL"
REDIS = "Redis"
RETRY_AFTER_SECONDS = 2
FIRST_DELAY, LONGEST_DELAY = 0.1, 1.0

# SQLSTATE classes and codes of a server that cannot be reached, is shutting down or is
# starting: connection exceptions (08), operator intervention (57P01-57P03).
_POSTGRES_DOWN_STATES = ("57P01", "57P02", "57P03")

T = TypeVar("T")

_DISK = "the disk holding "


def disk(folder: Path | str) -> str:
    """The outage of the embedded database whose files are in `folder`: its disk."""
    return f"{_DISK}{folder}"


def describe(service: str) -> str:
    """What is wrong with `service` now, for `/ok`: "the disk holding /x is full"."""
    return f"{service} {outages.condition.get(service, 'is unavailable')}"


def service_down(exc: BaseException) -> str | None:
    """The service (POSTGRES or REDIS) that `exc`, or a failure that led to it, says cannot
    be reached; None for any other failure."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        service = _down(current)
        if service is not None:
            return service
        current = current.__cause__ or current.__context__
    return None


def _down(exc: BaseException) -> str | None:
    if isinstance(exc, DiskUnavailable):
        return exc.service
    # Only the libraries already imported can have raised: SQLite-only processes never
    # import psycopg or redis for this.
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None:
        if isinstance(exc, psycopg.InterfaceError):
            return POSTGRES
        if isinstance(exc, psycopg.OperationalError):
            state = exc.sqlstate
            if state is None or state.startswith("08") or state in _POSTGRES_DOWN_STATES:
                return POSTGRES
    pool = sys.modules.get("psycopg_pool")
    if pool is not None and isinstance(exc, pool.PoolTimeout):
        return POSTGRES
    redis = sys.modules.get("redis.exceptions")
    if redis is not None and isinstance(
        exc, redis.ConnectionError | redis.TimeoutError | redis.BusyLoadingError
    ):
        return REDIS
    return None


def outage_errors() -> tuple[type[Exception], ...]:
    """The exception classes that can mean a service is unreachable (`service_down` tells
    for sure), for handlers that match by class: those of the libraries already loaded, as
    in `_down` (a server on PostgreSQL and Redis has opened its storage by then; the
    embedded one never loads them)."""
    names = {
        "psycopg": ("OperationalError", "InterfaceError"),
        "psycopg_pool": ("PoolTimeout",),
        "redis.exceptions": ("ConnectionError", "TimeoutError"),
    }
    return tuple(
        getattr(module, name)
        for module_name, classes in names.items()
        if (module := sys.modules.get(module_name)) is not None
        for name in classes
    )


class _Outages:
    """When each service was first seen down (logged once per outage)."""

    def __init__(self) -> None:
        self.since: dict[str, float] = {}
        self.ended: dict[str, float] = {}  # when each service was last seen back
        self.condition: dict[str, str] = {}  # what is wrong with each service down

    def down(self, service: str, exc: BaseException) -> None:
        if service in self.since:
            return
        self.since[service] = time.monotonic()
        if isinstance(exc, DiskUnavailable):
            self.condition[service] = exc.condition
            log.warning(
                "%s %s: what runs write waits in memory until it has room, and requests "
                "that must write get 503 — free space on it",
                service,
                exc.condition,
            )
            return
        log.warning(
            "%s is unavailable (%s: %s); runs wait for it and go on when it is back",
            service,
            type(exc).__name__,
            str(exc).strip().splitlines()[0] if str(exc).strip() else "no answer",
        )

    def settle(self, unavailable: list[str]) -> None:
        """Every service not in `unavailable` (all were just asked) is back. A disk says
        itself when it takes writes again (another storage's may be asked elsewhere)."""
        for service in [name for name in self.since if name not in unavailable]:
            if not service.startswith(_DISK):
                self.up(service)

    def up(self, service: str) -> None:
        since = self.since.pop(service, None)
        self.condition.pop(service, None)
        if since is None:
            return
        self.ended[service] = time.monotonic()
        if service.startswith(_DISK):
            log.warning("%s takes writes again after %.1f s; what waited is stored", service,
                        time.monotonic() - since)  # fmt: skip
        else:
            log.warning("%s is back after %.1f s", service, time.monotonic() - since)

    def lately(self, service: str, seconds: float) -> bool:
        """Whether `service` is down, or was within the last `seconds`."""
        ended = self.ended.get(service)
        return service in self.since or (ended is not None and time.monotonic() - ended < seconds)


outages = _Outages()


async def ride_out(operation: Callable[[], Awaitable[T]]) -> T:
    """`await operation()`, done again (after a growing pause, up to LONGEST_DELAY) for as
    long as it fails because PostgreSQL or Redis cannot be reached. Any other failure is
    raised. `operation` must be safe to repeat: it may have taken effect before the
    connection dropped. Cancellation (a cancel, a shutdown, a timeout) ends the wait."""
    delay = FIRST_DELAY
    failed: str | None = None
    while True:
        try:
            result = await operation()
        except Exception as exc:
            service = service_down(exc)
            if service is None:
                raise
            failed = service
            outages.down(service, exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, LONGEST_DELAY)
            continue
        if failed is not None:
            outages.up(failed)
        return result
