"""A serving process settles its heap (`agentctl.server.heap`) without keeping garbage: cycles
made after it are collected, and after a revision switch so are those of the old revision.
Run in a child process: settling changes the collector of the whole process."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = """
import gc, weakref
from agentctl.server import heap

class Node:
    pass

def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a

heap.resettle_heap()
assert gc.get_freeze_count() == 0, "only a process that settled its heap freezes it"

serving = [cycle()]  # what the first revision built: alive when the heap is settled
old_revision = weakref.ref(serving[0])
heap.settle_heap()
assert gc.get_freeze_count() > 0
serving.clear()  # the revision is replaced: its cycle is garbage now

made_after = weakref.ref(cycle())  # garbage made while serving
gc.collect()
assert made_after() is None, "a cycle made after settling was not collected"

gc.collect()
assert old_revision() is not None, "frozen: out of the collector's reach until a switch"
heap.resettle_heap()  # a revision switch
assert old_revision() is None, "the old revision's cycle was kept after the switch"
print("ok")
"""


@pytest.mark.slow
def test_settled_heap_still_collects_cycles() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
