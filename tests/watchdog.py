"""A test that hangs fails, naming where it waits, instead of holding the suite until CI's
time is up with nothing printed.

Each test (its set-up, call and tear-down) gets `AGENTCTL_TEST_TIMEOUT` seconds (default
600: the first test to need Node or Chromium installs their packages). When they are up,
the stacks of every thread and of every task of the running event loop are printed, and
the test fails. A test that does not give way within a minute more ends the suite.
"""

from __future__ import annotations

import asyncio
import faulthandler
import os
import signal
import sys
from collections.abc import Iterator
from types import FrameType

import pytest

GRACE = 60.0  # seconds a timed-out test has to fail before the suite is ended


def _limit() -> float:
    return float(os.environ.get("AGENTCTL_TEST_TIMEOUT", "600"))


def _print_stacks(title: str) -> None:
    """Every thread's stack, and every task's of the loop running on this thread."""
    err = sys.__stderr__
    assert err is not None
    print(f"\n{'+' * 30} {title} {'+' * 30}", file=err, flush=True)
    faulthandler.dump_traceback(file=err, all_threads=True)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    for task in asyncio.all_tasks(loop):
        print(f"-- {task!r}", file=err)
        task.print_stack(limit=30, file=err)
    err.flush()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    limit = _limit()
    if limit <= 0 or not hasattr(signal, "setitimer"):
        return (yield)

    def timed_out(signum: int, frame: FrameType | None) -> None:
        _print_stacks(f"{item.nodeid} still runs after {limit:.0f} s")
        signal.signal(signal.SIGALRM, gave_up)
        signal.setitimer(signal.ITIMER_REAL, GRACE)
        pytest.fail(f"the test took more than {limit:.0f} s (AGENTCTL_TEST_TIMEOUT)")

    def gave_up(signum: int, frame: FrameType | None) -> None:
        _print_stacks(f"{item.nodeid} did not stop {GRACE:.0f} s after it timed out")
        os._exit(3)

    previous = signal.signal(signal.SIGALRM, timed_out)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
