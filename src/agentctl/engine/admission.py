"""How many runs a replica executes at once: as many as its event loop keeps up with.

A run mostly waits for its model, so a replica can hold hundreds of them; but each also
needs the CPU for its steps and for every token it streams. Past what the CPU gives, more
runs finish nothing sooner: every run's tokens reach its client late, and the runs hold
memory while they crawl. So the limit follows the event loop's lag (how late a timer set
every `INTERVAL` fires, averaged over `WINDOW`), as TCP's congestion window follows loss:

- while the loop lags more than `max_lag`, the limit shrinks by a tenth, once the runs in
  flight have come down to it (a run in flight is never stopped);
- while the limit holds runs back and the loop keeps up, it grows: it doubles while the lag
  is under half of `max_lag` (so a burst of runs starts within a second), else by one;
- it stays between `FLOOR` (so runs go on whatever slows the loop) and `max_runs`.

The runs it holds back stay pending in storage, in their fair order, for this replica or
any other. `max_lag=None` admits `max_runs` whatever the lag.
"""

from __future__ import annotations

import asyncio

INTERVAL = 0.02  # seconds between two lag samples
WINDOW = 0.2  # seconds of samples the limit follows
FLOOR = 8  # runs a replica executes even when its loop lags
DEFAULT_MAX_LAG = 0.01  # seconds


class Admission:
    """Slots for runs: at most `max_runs`, fewer while the event loop lags."""

    def __init__(self, max_runs: int, max_lag: float | None = DEFAULT_MAX_LAG) -> None:
        self.max_runs = max_runs
        self.max_lag = max_lag
        self.floor = min(max_runs, FLOOR)
        self.limit = max_runs if max_lag is None else self.floor
        self.executing = 0
        self.lag = 0.0  # the mean lag of the last window, in seconds
        self._waiting = False  # a claim waits for a slot
        self._room = asyncio.Event()
        self._room.set()

    async def acquire(self) -> None:
        """Wait for a slot."""
        while self.executing >= self.limit:
            self._waiting = True
            self._room.clear()
            await self._room.wait()
        self._waiting = False
        self.executing += 1

    def release(self) -> None:
        self.executing -= 1
        self._signal()

    def observe(self, lag: float) -> None:
        """Follow one window's mean lag (seconds)."""
        self.lag = lag
        if self.max_lag is None:
            return
        if lag > self.max_lag:
            if self.executing <= self.limit:  # the last cut has taken effect
                self.limit = max(self.floor, self.limit - max(1, self.limit // 10))
        elif self._waiting and self.executing >= self.limit:
            grow = self.limit if lag < self.max_lag / 2 else 1
            self.limit = min(self.max_runs, self.limit + grow)
        self._signal()

    async def watch(self) -> None:
        """Measure the loop's lag and follow it, until cancelled."""
        loop = asyncio.get_running_loop()
        total, samples, window_end = 0.0, 0, loop.time() + WINDOW
        while True:
            before = loop.time()
            await asyncio.sleep(INTERVAL)
            after = loop.time()
            total += max(0.0, after - before - INTERVAL)
            samples += 1
            if after >= window_end:
                self.observe(total / samples)
                total, samples, window_end = 0.0, 0, after + WINDOW

    def _signal(self) -> None:
        if self.executing < self.limit:
            self._room.set()


def max_lag_setting(milliseconds: float) -> float | None:
    """`AGENTCTL_MAX_LOOP_LAG_MS` as `max_lag`: seconds, or None for 0 (no lag limit)."""
    return milliseconds / 1000 if milliseconds > 0 else None
