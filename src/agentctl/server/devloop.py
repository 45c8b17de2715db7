"""The server of `agentctl dev`: one process on the embedded SQLite store, reloaded in place
when the project changes, with blocking calls on its event loop reported.

A reload re-validates and re-bundles the project, loads the new revision beside the old one
and swaps it in: runs already under way finish on the revision they started on. A project
that no longer validates (or loads) is reported and the old revision keeps serving.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from watchfiles import DefaultFilter, awatch

from agentctl.aio import stop_task
from agentctl.bundle.build import STATE_DIR
from agentctl.bundle.revision import Revision
from agentctl.engine.admission import DEFAULT_MAX_LAG
from agentctl.errors import RuntimeFailure
from agentctl.project.model import Project
from agentctl.runtime import AgentRuntime, load_agent
from agentctl.server.app import create_app
from agentctl.server.blocking import BlockingDetector
from agentctl.server.context import Server
from agentctl.server.embedded import dev_access, open_embedded_server
from agentctl.server.heap import settle_heap
from agentctl.server.http import (
    NotifyingUvicorn,
    base_url,
    uvicorn_config,
)
from agentctl.server.limits import Limits
from agentctl.server.origins import OriginPolicy
from agentctl.storage.outages import describe

log = logging.getLogger("agentctl.dev")

DATA_DIR = f"{STATE_DIR}/data"
# Seconds open connections (e.g. a stream) get to finish when the server stops.
GRACEFUL_SHUTDOWN = 3


@dataclass(frozen=True)
class Build:
    """A validated project and the revision bundled from it."""

    project: Project
    revision: Revision


class DevEvents(Protocol):
    """What the dev server tells its user (the CLI prints it)."""

    def ready(self, dev: DevServer) -> None: ...
    def reloaded(self, dev: DevServer, previous: Build) -> None: ...
    def reload_failed(self, error: Exception, serving: Build) -> None: ...


class ProjectFilter(DefaultFilter):
    """Every project file except agentctl's own state, VCS folders, caches and editor
    temporaries."""

    def __init__(self) -> None:
        super().__init__(ignore_dirs=(*DefaultFilter.ignore_dirs, STATE_DIR))


class DevServer:
    """Serves `first` on `sock`, reloading through `rebuild` when the project changes.

    The project's variables (`.env` overlaid by the shell's environment: `project.env`) go
    to its runtime, never into the process environment; a value changed in `.env` takes
    effect on reload.
    """

    def __init__(
        self,
        first: Build,
        rebuild: Callable[[], Build],
        *,
        sock: socket.socket,
        events: DevEvents,
        allow_blocking: bool = False,
        watch: bool = True,
        origins: OriginPolicy | None = None,
        limits: Limits | None = None,
        max_runs: int = 256,
        max_lag: float | None = DEFAULT_MAX_LAG,
    ) -> None:
        self.build = first
        self.rebuild = rebuild
        self.sock = sock
        self.events = events
        self.allow_blocking = allow_blocking
        self.watch = watch
        self.origins = origins
        self.limits = limits or Limits()
        self.max_runs = max_runs
        self.max_lag = max_lag
        self.server: Server | None = None
        # What is wrong with the storage at start ("the disk holding /x is full").
        self.outages: list[str] = []
        # Ready (the ready message is out): a Ctrl-C or SIGTERM from here on is a graceful
        # stop, one before interrupts the start.
        self.ready = False
        self.detector: BlockingDetector | None = None
        self._failed = False
        self._watcher: asyncio.Task[None] | None = None
        self._uvicorn: NotifyingUvicorn | None = None

    @property
    def root(self) -> Path:
        return self.build.project.root

    @property
    def data_dir(self) -> Path:
        return self.root / DATA_DIR

    @property
    def url(self) -> str:
        host, port = self.sock.getsockname()[:2]
        return base_url(host, port)

    async def run(self) -> None:
        """Serve until the process is told to stop (Ctrl-C, SIGTERM)."""
        server = await open_embedded_server(
            self.build.project,
            self.build.revision.id,
            self.data_dir,
            origins=self.origins,
            limits=self.limits,
            max_runs=self.max_runs,
            max_lag=self.max_lag,
            restarted_by="`agentctl dev`",
            public_url=self.url,
        )
        self.server = server
        self.outages = [describe(service) for service in await server.storage.unavailable()]
        config = uvicorn_config(
            create_app(server), self.limits, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN
        )
        uv = self._uvicorn = NotifyingUvicorn(
            config, on_started=self._started, on_stopping=self._stopping
        )
        try:
            await uv.serve(sockets=[self.sock])
        except SystemExit:  # uvicorn's way of saying the application did not start
            raise RuntimeFailure("the server could not start — see the messages above") from None
        finally:
            await self._stopping()
            if not uv.started:
                await server.stop()

    def stop(self) -> None:
        """Stop serving, as Ctrl-C does (call from the server's event loop)."""
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True

    # -- lifecycle hooks (on the server's event loop) -------------------------------------

    def _started(self) -> None:
        assert self.server is not None
        settle_heap()
        if not self.allow_blocking:
            self.detector = BlockingDetector(
                asyncio.get_running_loop(),
                exempt_connections=_connections(self.server.storage),
                exempt_functions=[("agentctl/server/devloop.py", {"_load_runtime"})],
            )
            self.detector.activate()
        self.ready = True
        if self.watch:
            self._watcher = asyncio.create_task(self._watch(), name="agentctl-dev-watch")
        self.events.ready(self)

    async def _stopping(self) -> None:
        if self.server is not None:
            self.server.begin_stopping()
        watcher, self._watcher = self._watcher, None
        await stop_task(watcher)
        if self.detector is not None:
            self.detector.deactivate()
            self.detector = None

    # -- reloading ------------------------------------------------------------------------

    async def _watch(self) -> None:
        try:
            async for _ in awatch(self.root, watch_filter=ProjectFilter()):
                await self.reload()
        except Exception as exc:  # e.g. the folder was removed: keep serving
            log.warning("stopped watching %s for changes: %s", self.root, exc)

    async def reload(self) -> bool:
        """Rebuild and swap in the project as it is on disk now; False when it is unchanged
        or invalid (then the old revision keeps serving and the problem is reported)."""
        server = self.server
        assert server is not None
        try:
            build = await asyncio.to_thread(self.rebuild)
            if not self._failed and self._same(build):
                return False
            access = server.access
            if (build.project.auth, build.project.env) != (
                self.build.project.auth,
                self.build.project.env,
            ):
                access = dev_access(build.project)
            runtime = await self._load_runtime(server, build)
        except Exception as exc:  # a reload never stops the server
            self._failed = True
            self.events.reload_failed(exc, self.build)
            return False
        await server.switch(runtime, access)
        previous, self.build = self.build, build
        self._failed = False
        self.events.reloaded(self, previous)
        return True

    async def _load_runtime(self, server: Server, build: Build) -> AgentRuntime:
        """Load a revision. Like loading at startup, this may block the loop (e.g. a
        provider package reading its files once): it is exempt from blocking detection."""
        return await load_agent(
            build.project,
            build.revision.id,
            store=server.storage.store,
            checkpointer=server.storage.checkpointer,
            sandboxes=server.sandboxes,
            connections=None
            if server.connections is None
            else server.connections.of(build.project),
        )

    def _same(self, build: Build) -> bool:
        current = self.build
        return build.revision.id == current.revision.id and build.project.env == current.project.env


def _connections(storage: object) -> list[sqlite3.Connection]:
    """The embedded database's connections (server tables, store), which run short
    queries inline on the loop by design."""
    return [value for value in vars(storage).values() if isinstance(value, sqlite3.Connection)]


def configure_logging(level: str = "info") -> None:
    """What the server and runs log at `level` and above (e.g. a run that failed) goes to
    stderr; `debug` adds the tracebacks of runs' failures."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.set_name("agentctl-dev")
    ours = logging.getLevelNamesMapping()[level.upper()]
    for name, level_number in (("agentctl", ours), ("uvicorn", max(ours, logging.WARNING))):
        logger = logging.getLogger(name)
        if not any(h.get_name() == handler.get_name() for h in logger.handlers):
            logger.addHandler(handler)
        logger.setLevel(level_number)
