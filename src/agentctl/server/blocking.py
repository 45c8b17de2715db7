"""Blocking-call detection for `agentctl dev`, on blockbuster (as `langgraph dev` does).

While active, a call that would block the server's event loop (`time.sleep`, a blocking
socket, a file read, a lock wait, ...) made *on that loop* raises `BlockingError` where it
is made, naming the call, where it came from and the way out (`--allow-blocking`). The run
that made it fails with that message. Other threads and other event loops are not watched.

What our own stack legitimately does on the loop is allowed:

- the embedded SQLite database runs short queries inline on purpose (see
  `agentctl.storage.sqlite.database`): its connections are exempt, any other is not; so is
  its look at how much room its disk has left while the disk is full;
- printing to the terminal (stdout/stderr) and logging;
- what Python does on a module's first import, `importlib.metadata` and `inspect` lookups
  libraries do on first use, and `os.stat`-like calls (cheap on a local disk);
- loading a revision: at startup it happens before activation; on reload the caller exempts
  its loading function (`exempt_functions`).

The error is also logged when it is made, since a library may catch it and fail with a
vaguer error of its own (an HTTP client retrying, say).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import blockbuster.blockbuster as bb

log = logging.getLogger("agentctl.dev")

HINT = (
    "make the call async or move it off the loop (asyncio.to_thread), or start "
    "`agentctl dev --allow-blocking` to allow blocking calls"
)

FunctionSpec = tuple[str, Iterable[str]]  # (file name suffix, function names)

# Not watched: metadata lookups, cheap on a local disk and done by importlib, linecache,
# inspect and many libraries on first use.
_UNWATCHED = (
    "os.stat",
    "os.getcwd",
    "os.access",
    "os.path.abspath",
    "os.path.islink",
    "os.path.ismount",
    "os.path.samestat",
    "os.path.sameopenfile",
)
_METADATA = {"distribution", "distributions", "version", "metadata", "entry_points",
             "requires", "files", "packages_distributions"}  # fmt: skip
_READS = ("os.listdir", "os.scandir", "io.BufferedReader.read", "io.TextIOWrapper.read")
# Library internals allowed to block on the loop, per watched call.
_CAN_BLOCK: dict[str, list[FunctionSpec]] = {
    **{
        name: [
            ("importlib/metadata/__init__.py", _METADATA),
            ("importlib_metadata/__init__.py", _METADATA),
            ("linecache.py", {"updatecache", "checkcache"}),  # formatting a traceback
        ]
        for name in _READS
    },
    # logging (to the terminal, or to a file a user configured), and what `dev` prints: a
    # pipe's buffer (`agentctl dev | tee log`) flushes on the loop, as a terminal does
    **{
        name: [("logging/__init__.py", {"emit", "flush"}), ("click/utils.py", {"echo"})]
        for name in ("io.TextIOWrapper.write", "io.BufferedWriter.write")
    },
    "os.statvfs": [("agentctl/storage/sqlite/database.py", {"free_bytes"})],
}


class BlockingCallError(bb.BlockingError):  # type: ignore[misc]
    """A blocking call on the server's event loop (a `blockbuster.BlockingError`)."""

    def __init__(self, func: str) -> None:
        self.func = func
        self.where = _caller()
        at = f" in {self.where}" if self.where else ""
        what = f"blocking call to {func}{at} on the server's event loop"
        log.warning("%s", what)
        Exception.__init__(self, f"{what} — {HINT}")


def _caller() -> str:
    """`file:line (function)` of the code that made the blocking call."""
    frame = inspect.currentframe()
    own = {__file__, bb.__file__}
    while frame is not None and frame.f_code.co_filename in own:
        frame = frame.f_back
    if frame is None:
        return ""
    return f"{frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"


class BlockingDetector:
    """Blockbuster, watching one event loop, with our exemptions."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        exempt_connections: Iterable[sqlite3.Connection] = (),
        exempt_functions: Iterable[FunctionSpec] = (),
    ) -> None:
        """Watch `loop`. Queries on `exempt_connections` and any call made (directly or
        not) from `exempt_functions` may block."""
        self.loop = loop
        self.connections = set(exempt_connections)
        self.buster = bb.BlockBuster()
        functions = self.buster.functions
        for name in _UNWATCHED:
            functions.pop(name, None)
        for name, allowed in _CAN_BLOCK.items():
            for filename, funcs in allowed:
                functions[name].can_block_in(filename, funcs)
        exempt = list(exempt_functions)
        for name, function in functions.items():
            function.full_name = name
            for filename, funcs in exempt:
                function.can_block_in(filename, funcs)
            function.can_block_predicate = self._predicate(name, function.can_block_predicate)
        self._saved_error: type[bb.BlockingError] | None = None

    def _predicate(self, name: str, allowed: Callable[..., bool]) -> Callable[..., bool]:
        sqlite = name.startswith("sqlite3.")

        def can_block(*args: Any, **kwargs: Any) -> bool:
            if asyncio.get_running_loop() is not self.loop:
                return True
            if sqlite and args and _connection(args[0]) in self.connections:
                return True
            return allowed(*args, **kwargs)

        return can_block

    @property
    def active(self) -> bool:
        return self._saved_error is not None

    def activate(self) -> None:
        if self.active:
            return
        self._saved_error = bb.BlockingError
        bb.BlockingError = BlockingCallError
        self.buster.activate()

    def deactivate(self) -> None:
        if self._saved_error is None:
            return
        self.buster.deactivate()
        bb.BlockingError = self._saved_error
        self._saved_error = None


def _connection(obj: Any) -> Any:
    return obj.connection if isinstance(obj, sqlite3.Cursor) else obj


@contextmanager
def detect_blocking(
    loop: asyncio.AbstractEventLoop,
    *,
    exempt_connections: Iterable[sqlite3.Connection] = (),
    exempt_functions: Iterable[FunctionSpec] = (),
) -> Iterator[BlockingDetector]:
    """Detect blocking calls on `loop` inside the block."""
    detector = BlockingDetector(
        loop, exempt_connections=exempt_connections, exempt_functions=exempt_functions
    )
    detector.activate()
    try:
        yield detector
    finally:
        detector.deactivate()
