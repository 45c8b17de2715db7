"""Crons: schedules that submit runs. The scheduler sleeps until the earliest cron is due
(or until a cron is created or changed), submits its run through the run engine, and
computes the next date with croniter in the cron's timezone.

A cron on a thread runs on that thread; a stateless cron runs on a new thread each time,
deleted after the run unless `on_run_completed` is "keep". A cron is disabled once its
next date would pass its `end_time`. A firing missed while the server was down happens
once when it comes back, not once per missed date; with many replicas, each date fires on
exactly one (the one whose reschedule of the cron wins).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, CroniterError, croniter

from agentctl.aio import stop_task
from agentctl.engine.engine import RunEngine
from agentctl.errors import BudgetExceeded, ThreadBusyError
from agentctl.storage.base import (
    BY_OPERATOR,
    OWNER,
    Cron,
    CronFilter,
    Page,
    Run,
    Storage,
    Thread,
    new_id,
    now,
)
from agentctl.storage.outages import outages, service_down

log = logging.getLogger("agentctl.engine")

# The fields of a cron's payload that become the run's kwargs.
RUN_FIELDS = (
    "input", "config", "context", "interrupt_before", "interrupt_after", "stream_mode",
    "stream_subgraphs", "stream_resumable", "durability", "webhook",
)  # fmt: skip


_ZONES: dict[str, tzinfo] = {}


def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"timezone {name!r} is not an IANA timezone name (e.g. 'Europe/Paris', 'UTC')"
        ) from None


async def load_timezone(name: str | None) -> tzinfo:
    """The zone named `name` (UTC when None), its file read off the event loop once;
    ValueError for an unknown name."""
    if not name:
        return UTC
    zone = _ZONES.get(name)
    if zone is None:
        zone = _ZONES[name] = await asyncio.to_thread(_zone, name)
    return zone


def parse_timezone(name: str | None) -> tzinfo:
    """The zone named `name` (UTC when None); ValueError for an unknown name. Call
    `load_timezone` first to keep the file read off the event loop."""
    if not name:
        return UTC
    zone = _ZONES.get(name)
    if zone is None:
        zone = _ZONES[name] = _zone(name)
    return zone


def check_schedule(schedule: str) -> str:
    """`schedule` if croniter accepts it and it fires at all; ValueError saying what is
    wrong otherwise."""
    try:
        parsed = croniter(schedule, now())
    except (CroniterError, ValueError, KeyError) as exc:
        raise ValueError(
            f"schedule {schedule!r} is not a valid cron expression ({exc}) — use 5 fields "
            "'minute hour day month weekday', e.g. '0 9 * * 1-5', or 6 with seconds last"
        ) from None
    try:
        parsed.get_next(datetime)
    except CroniterBadDateError:
        raise ValueError(
            f"schedule {schedule!r} never fires (no date matches it, e.g. February 31st)"
        ) from None
    return schedule


def next_run(schedule: str, timezone: str | None, after: datetime) -> datetime:
    """The first date strictly after `after` that `schedule` matches, in UTC."""
    start = after.astimezone(parse_timezone(timezone))
    following: datetime = croniter(schedule, start).get_next(datetime)
    return following.astimezone(UTC)


def as_utc(value: datetime | None, timezone: str | None) -> datetime | None:
    """An aware UTC datetime; a naive one is taken in the cron's timezone."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=parse_timezone(timezone))
    return value.astimezone(UTC)


def schedule_next(cron: Cron, after: datetime) -> Cron:
    """Set the cron's next date after `after`; disable it when that is past `end_time`."""
    following = next_run(cron.schedule, cron.timezone, after)
    if cron.end_time is not None and following > cron.end_time:
        cron.enabled, cron.next_run_date = False, None
    else:
        cron.next_run_date = following
    return cron


class CronScheduler:
    """Fires due crons. `wake()` after creating or changing one."""

    def __init__(self, storage: Storage, engine: RunEngine, *, max_sleep: float = 60.0) -> None:
        self.storage = storage
        self.engine = engine
        self.max_sleep = max_sleep
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="agentctl-crons")

    async def stop(self) -> None:
        await stop_task(self._task)
        self._task = None

    def wake(self) -> None:
        self._wake.set()

    async def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                await self.fire_due()
                timeout = await self._seconds_to_next()
            except Exception as exc:
                service = service_down(exc)
                if service is not None:  # an outage: logged once, storage/outages.py
                    outages.down(service, exc)
                else:
                    log.exception("the cron scheduler failed; retrying in %s s", self.max_sleep)
                timeout = self.max_sleep
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _seconds_to_next(self) -> float:
        upcoming, _ = await self.storage.crons.search(
            CronFilter(enabled=True), Page(limit=1, sort_by="next_run_date", sort_order="asc")
        )
        if not upcoming or upcoming[0].next_run_date is None:
            return self.max_sleep
        delay = (upcoming[0].next_run_date - now()).total_seconds()
        return min(self.max_sleep, max(0.0, delay))

    async def fire_due(self) -> list[Run]:
        """Submit a run for every due cron and schedule its next date."""
        at = now()
        runs = []
        for due in await self.storage.crons.due(at):
            cron = await self.storage.crons.get(due.cron_id)  # as it is now
            if cron is None or not cron.enabled or cron.next_run_date is None:
                continue
            await load_timezone(cron.timezone)
            expected = cron.next_run_date
            if cron.end_time is not None and at > cron.end_time:
                cron.enabled, cron.next_run_date = False, None
                await self.storage.crons.reschedule(cron, expected=expected)
                continue
            if not await self.storage.crons.reschedule(schedule_next(cron, at), expected=expected):
                continue  # another replica fired this date
            try:
                run = await self.fire(cron)
            except Exception:
                log.exception("cron %s could not submit its run", cron.cron_id)
                continue
            if run is not None:
                runs.append(run)
        return runs

    async def fire(self, cron: Cron) -> Run | None:
        """Submit one run of `cron` now; none while a budget of its user or of the agent is
        spent (logged: the cron fires again at its next date)."""
        try:
            await self.engine.admit(cron.user_id or None)
        except BudgetExceeded as exc:
            log.warning("cron %s skipped a run: %s", cron.cron_id, exc)
            return None
        payload = cron.payload
        kwargs: dict[str, Any] = {k: payload[k] for k in RUN_FIELDS if payload.get(k) is not None}
        if cron.user_id:
            kwargs["user_id"] = cron.user_id
        if payload.get(BY_OPERATOR) is True:
            kwargs[BY_OPERATOR] = True
        temporary = False
        if cron.thread_id is None:
            thread_id = str(uuid.uuid4())
            temporary = cron.on_run_completed != "keep"
            metadata = {
                "graph_id": self.engine.deployment.graph_id,
                "assistant_id": cron.assistant_id,
                "cron_id": cron.cron_id,
            }
            if cron.user_id:
                metadata[OWNER] = cron.user_id
            await self.storage.threads.create(Thread(thread_id=thread_id, metadata=metadata))
        else:
            thread_id = cron.thread_id
            if await self.storage.threads.get(thread_id) is None:
                log.warning("cron %s: thread %s is gone; disabling it", cron.cron_id, thread_id)
                cron.enabled, cron.next_run_date = False, None
                await self.storage.crons.update(cron)
                return None
        run = Run(
            run_id=new_id(),
            thread_id=thread_id,
            assistant_id=cron.assistant_id,
            metadata=dict(payload.get("metadata") or {}),
            multitask_strategy=payload.get("multitask_strategy") or "enqueue",
            kwargs=kwargs,
            temporary=temporary,
        )
        try:
            return await self.engine.submit(run)
        except ThreadBusyError as exc:
            log.info("cron %s skipped a run: %s", cron.cron_id, exc)
            return None
