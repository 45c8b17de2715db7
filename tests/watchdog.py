"""A test that hangs fails, naming where it waits, instead of holding the suite until CI's
time is up with nothing printed.

Each test (its set-up, call and tear-down) gets `AGENTCTL_TEST_TIMEOUT` seconds (default
600: the first test to need Node or Chromium installs their packages). When they are up,
the test fails, its report holding the stacks of every thread and of every task of the
running event loop. A test that does not give way within a minute more ends its process
(its pytest-xdist worker, which is replaced), printing them.
"""

from __future__ import annotations

import asyncio
import io
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from types import FrameType

import pytest

GRACE = 60.0  # seconds a timed-out test has to fail before the suite is ended


def _limit() -> float:
    return float(os.environ.get("AGENTCTL_TEST_TIMEOUT", "600"))


def _stacks() -> str:
    """Every thread's stack, and every task's of the loop running on this thread."""
    out = io.StringIO()
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        out.write(f"-- thread {names.get(ident, ident)}\n")
        out.write("".join(traceback.format_stack(frame)))
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return out.getvalue()
    for task in asyncio.all_tasks(loop):
        out.write(f"-- {task!r}\n")
        task.print_stack(limit=30, file=out)
    return out.getvalue()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    limit = _limit()
    if limit <= 0 or not hasattr(signal, "setitimer"):
        return (yield)

    def timed_out(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGALRM, gave_up)
        signal.setitimer(signal.ITIMER_REAL, GRACE)
        pytest.fail(f"the test took more than {limit:.0f} s (AGENTCTL_TEST_TIMEOUT); "
                    f"where it waits:\n{_stacks()}")  # fmt: skip

    def gave_up(signum: int, frame: FrameType | None) -> None:
        print(f"{item.nodeid} did not stop {GRACE:.0f} s after it timed out:\n{_stacks()}",
              file=sys.__stderr__, flush=True)  # fmt: skip
        os._exit(3)

    previous = signal.signal(signal.SIGALRM, timed_out)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
