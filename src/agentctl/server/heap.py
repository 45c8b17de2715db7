"""The garbage collector of a serving process, set for a long-lived heap and many short runs.

A server process holds a large heap it keeps (the compiled agent, its tools and schemas, the
libraries), and each run allocates many short-lived objects. With Python's defaults the
collector scans that heap again and again: at 16 concurrent runs a full collection every few
seconds took about 200 ms, some 12% of the CPU. Once the server serves, what it built is
moved out of the collector's reach (`gc.freeze`) and the youngest generation is collected
less often. Objects still die at once when unreferenced, and cycles are still collected;
after a revision switch the heap is settled again, so the old revision's cycles are too.

After a large request the memory it freed is handed back to the system (`release_memory_soon`).
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
from typing import Any

YOUNG_GENERATION = 20_000  # allocations between collections of the youngest generation

_settled = False


def settle_heap() -> None:
    """Call once the server serves (its agent loaded), in a process of its own."""
    global _settled
    _settled = True
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION, middle, old)


def resettle_heap() -> None:
    """After a revision switch, in a process whose heap was settled: let what the old
    revision leaves behind be collected, and keep the new one out of the way."""
    if _settled:
        settle_heap()


_RELEASE_DELAY = 1.0  # seconds: one release covers the large requests that end meanwhile
_release_pending = False


def release_memory_soon() -> None:
    """After a large request: collect its cycles and hand the freed memory back to the
    system, once for all the large requests ending within a second. Without this, glibc keeps
    the pages of a request that built a large object graph for the life of the process."""
    global _release_pending
    if not _release_pending:
        _release_pending = True
        asyncio.get_running_loop().call_later(_RELEASE_DELAY, _release)


def _release() -> None:
    global _release_pending
    _release_pending = False
    gc.collect()
    if _malloc_trim is not None:  # off the loop: it walks the whole heap
        asyncio.get_running_loop().run_in_executor(None, _malloc_trim, 0)


def _libc_malloc_trim() -> Any:
    """glibc's `malloc_trim`, or None elsewhere (musl, macOS: they return memory already)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_malloc_trim = _libc_malloc_trim()
