"""Fencing: only the attempt that holds a run may write for it.

A claimed run is leased to one worker for one attempt. A worker that stalls (a GC pause, a
throttled container, SIGSTOP) past its lease wakes up believing it still holds the run,
while another replica may have taken it over (attempt + 1). So every write a run makes —
checkpoints, pending writes, events, its status, its thread — carries its `Fence`, and the
database checks it in the same statement or transaction as the write: the row of the run
must still name this attempt and this worker. A refused write raises `StaleAttempt` and
stops the attempt at once (`Fence.stop`), so nothing it does afterwards reaches the thread,
the event log or a client.

Before each model call, tool call and event, `Fence.check` makes sure the lease has not run
out meanwhile: without a round trip while the worker's own reckoning of the lease says it
holds (the lease the database granted is counted from before the request that got it, so
it ends no later than the database's); past that, the database is asked to extend it, and
a lease another attempt took ends this one.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field


class StaleAttempt(Exception):
    """A write of an attempt that no longer holds its run (its lease expired, and the run was
    requeued or taken over): refused, and the attempt is stopped."""

    def __init__(self, run_id: str, attempt: int) -> None:
        super().__init__(f"run {run_id}: attempt {attempt} no longer holds the run")
        self.run_id, self.attempt = run_id, attempt


@dataclass(eq=False)
class Fence:
    """The token of one attempt of a run: what its writes are checked against."""

    run_id: str
    attempt: int
    worker: str
    # Asks the database to extend the lease of this attempt; False when it holds no more.
    extend: Callable[[Fence], Awaitable[bool]] = field(repr=False)
    # Stops the attempt (cancels its task); called once, on the first refused write.
    stop: Callable[[], None] = field(repr=False)
    lease: float = 30.0
    # Until when (time.monotonic) the lease surely holds, by the worker's own clock.
    holds_until: float = 0.0
    stale: bool = False

    def granted(self, asked_at: float) -> None:
        """The database extended the lease on a request sent at `asked_at` (monotonic)."""
        self.holds_until = max(self.holds_until, asked_at + self.lease)

    async def check(self) -> None:
        """Return when this attempt still holds its run; else stop it and raise."""
        if self.stale:
            raise StaleAttempt(self.run_id, self.attempt)
        if time.monotonic() < self.holds_until:
            return
        asked_at = time.monotonic()
        if not await self.extend(self):
            self.refused()
        self.granted(asked_at)

    def refused(self) -> StaleAttempt:
        """A write of this attempt was refused: stop the attempt. Raises `StaleAttempt`
        (returned for `raise fence.refused()`, so type checkers see the end)."""
        if not self.stale:
            self.stale = True
            self.stop()
        raise StaleAttempt(self.run_id, self.attempt)


# The fence of the attempt executing in this context: the checkpointers read it (langgraph
# calls them with the run's config, which is the client's to shape, not with the fence).
current: ContextVar[Fence | None] = ContextVar("agentctl_fence", default=None)
