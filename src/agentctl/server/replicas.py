"""Which replicas of a platform are live, and which revision of each agent each one serves:
how a deploy knows when it is served everywhere.

Each replica announces on the bus (`Bus.announce`) the revision it serves of each agent,
and the agents or revisions it could not load, with why. It renews that every
`HEARTBEAT_SECONDS`, and at once (with a message on topic `replicas`) whenever it changes;
a replica not heard of for `LIVE_SECONDS` (it died, or is frozen) has expired and is
waited for by no one. A replica that is stopping says so, and is not waited for either.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentctl.storage.base import Bus, Message
from agentctl.storage.outages import outages, service_down

log = logging.getLogger("agentctl.platform")

TOPIC = "replicas"
HEARTBEAT_SECONDS = 2.0
LIVE_SECONDS = 6.0
_RECHECK_SECONDS = 0.5  # a deploy reads the replicas again this often when none says more


def replica_name() -> str:
    """This process among the replicas: its host (the pod's name on Kubernetes) and pid."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:4]}"


@dataclass
class Served:
    """What one replica announces: the revision number it serves of each agent (None
    before the first deploy reaches it), the agents or revisions it cannot serve and why,
    and whether it is stopping."""

    agents: dict[str, int | None] = field(default_factory=dict)
    refused: dict[str, dict[str, Any]] = field(default_factory=dict)  # {"number", "reason"}
    stopping: bool = False

    def message(self) -> Message:
        return {"agents": self.agents, "refused": self.refused, "stopping": self.stopping}

    @classmethod
    def of(cls, message: Message) -> Served:
        return cls(
            dict(message.get("agents") or {}),
            dict(message.get("refused") or {}),
            bool(message.get("stopping")),
        )


class Presence:
    """This replica's announcements, and what it hears of the others'."""

    def __init__(self, bus: Bus, state: Callable[[], Served]) -> None:
        self.bus = bus
        self.name = replica_name()
        self._state = state
        self._changed = asyncio.Event()
        self._heard = asyncio.Event()  # another replica announced a change
        self._task: asyncio.Task[None] | None = None
        self._failing = False

    async def start(self) -> None:
        self.bus.subscribe(TOPIC, self._on_announced)
        await self._announce()
        self._task = asyncio.create_task(self._run(), name="replica-presence")

    def changed(self) -> None:
        """What this replica serves changed: announce it now."""
        self._changed.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(Exception):  # else it expires
            await self.bus.withdraw(self.name)

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), HEARTBEAT_SECONDS)
            changed = self._changed.is_set()
            self._changed.clear()
            if await self._announce() and changed:
                with contextlib.suppress(Exception):
                    await self.bus.publish(TOPIC, {"replica": self.name})

    async def _announce(self) -> bool:
        try:
            await self.bus.announce(self.name, self._state().message(), LIVE_SECONDS)
        except Exception as exc:
            service = service_down(exc)
            if service is not None:  # Redis away: the outage is logged once, for all
                outages.down(service, exc)
            elif not self._failing:
                log.warning("this replica cannot announce what it serves: %r", exc)
            self._failing = True
            return False
        self._failing = False
        return True

    async def _on_announced(self, message: Message) -> None:
        if message.get("replica") != self.name:
            self._heard.set()

    async def rollout(self, agent: str, number: int, timeout: float) -> Rollout:
        """Wait up to `timeout` seconds until every live replica serves revision `number`
        of `agent` (or said it cannot); what each one does by then."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            self._heard.clear()
            rollout = await self._read(agent, number)
            remaining = deadline - loop.time()
            if rollout.done or remaining <= 0:
                return rollout
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._heard.wait(), min(remaining, _RECHECK_SECONDS))

    async def _read(self, agent: str, number: int) -> Rollout:
        try:
            members = {name: Served.of(state) for name, state in (await self.bus.members()).items()}
        except Exception as exc:
            return Rollout(serving=[self.name], unknown=f"the replicas could not be read: {exc!r}")
        members[self.name] = self._state()  # this one, as it is now
        rollout = Rollout()
        for name, served in sorted(members.items()):
            refused = served.refused.get(agent)
            if served.stopping and name != self.name:
                continue
            if served.agents.get(agent) == number:
                rollout.serving.append(name)
            elif refused is not None and refused.get("number") in (number, None):
                rollout.refused[name] = str(refused.get("reason"))
            else:
                rollout.waiting[name] = served.agents.get(agent, "none")
        return rollout


@dataclass
class Rollout:
    """Where a revision is served: the live replicas serving it, those that cannot (and
    why), those still on another one (which: a number, None before any, or "none": the
    agent is not open there yet)."""

    serving: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    waiting: dict[str, Any] = field(default_factory=dict)
    unknown: str | None = None  # why the replicas could not be read

    @property
    def done(self) -> bool:
        return not self.waiting

    def view(self) -> dict[str, Any]:
        """As the deploy's answer carries it (`replicas`)."""
        behind = [{"replica": name, "reason": why} for name, why in self.refused.items()]
        behind += [
            {"replica": name, "reason": f"still serves {_revision(serves)}"}
            for name, serves in self.waiting.items()
        ]
        view: dict[str, Any] = {"serving": self.serving, "not_serving": behind}
        if self.unknown is not None:
            view["unknown"] = self.unknown
        return view


def _revision(serves: Any) -> str:
    if serves == "none":
        return "no revision: the agent is not open there yet"
    return "no revision yet" if serves is None else f"revision {serves}"
