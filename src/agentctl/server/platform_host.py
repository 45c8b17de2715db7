"""The platform of agents `agentctl serve` hosts: one `Server` per agent, each on its own
storage namespace with its own engine, revisions, secrets, `[auth]`, crons and metrics.

The registry of agents (`platform_agents`) is in the default storage; replicas learn of
created and deleted agents over its bus (topic `agents`) and open or close their own
server for each. An agent deployed before the platform hosted several keeps its data in
the default storage (namespace None): `start` registers it so.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI
from starlette.requests import Request

from agentctl.bundle.revision import called_agents
from agentctl.errors import Conflict, NotFound, PeerUnavailable, Unprocessable, UserError
from agentctl.observability.logs import bind
from agentctl.observability.metrics import Metrics
from agentctl.server.context import Server
from agentctl.server.peers import InCluster
from agentctl.server.production import check_platform_settings, open_agent_server
from agentctl.settings import Settings
from agentctl.storage.base import (
    ACTIVE_RUN_STATUSES,
    AgentRecord,
    AssistantFilter,
    CronFilter,
    Message,
    Page,
    Storage,
    ThreadFilter,
)
from agentctl.storage.open import Close, drop_namespace, open_storage

log = logging.getLogger("agentctl.platform")

TOPIC = "agents"
_NAME_LIMIT = 128


@dataclass
class HostedAgent:
    """One agent as this replica serves it: its server and the application over it."""

    record: AgentRecord
    server: Server
    app: FastAPI
    # The application's lifespan, begun: it started the server and its MCP and A2A
    # endpoints; ending it stops them.
    lifespan: Lifespan

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def root(self) -> str:
        """Its base path on the platform."""
        return f"/agents/{quote(self.name, safe='')}"


class Lifespan:
    """An application's lifespan, run in a task of its own: it is begun and ended by
    different tasks (a deploy, the bus, shutdown), and the anyio task groups inside it (the
    MCP endpoint's) must end in the task that began them."""

    def __init__(self, app: FastAPI, name: str) -> None:
        self.app, self.name = app, name
        self._end = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def begin(self) -> None:
        """Run the lifespan up to serving; its error, if it fails to start. Cancelled, the
        lifespan ends as soon as it has begun."""
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run(started))
        try:
            await asyncio.shield(started)
        except asyncio.CancelledError:
            self._end.set()
            raise

    async def end(self) -> None:
        self._end.set()
        if self._task is not None:
            await self._task

    async def _run(self, started: asyncio.Future[None]) -> None:
        try:
            async with self.app.router.lifespan_context(self.app):
                started.set_result(None)
                await self._end.wait()
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc)
            elif isinstance(exc, Exception):  # ending it: logged, the others go on
                log.exception("agent %r stopped with an error", self.name)
            else:
                raise


class Platform:
    """The agents of one platform, as seen by one replica. Build it with `Platform.open`."""

    def __init__(
        self,
        settings: Settings,
        storage: Storage,
        close_storage: Close,
        make_app: Callable[[Server], FastAPI],
    ) -> None:
        self.settings = settings
        self.make_app = make_app  # the application serving one agent (`app.create_app`)
        self.storage = storage  # the default storage: the registry and its bus
        self._close_storage = close_storage
        self.agents: dict[str, HostedAgent] = {}
        self._lock = asyncio.Lock()  # one agent opened or closed at a time
        self.stopping_since: float | None = None

    @classmethod
    async def open(cls, settings: Settings, make_app: Callable[[Server], FastAPI]) -> Platform:
        """Check the settings and open the default storage. Raises `SettingsError`."""
        check_platform_settings(settings)
        storage, close = await open_storage(settings)
        return cls(settings, storage, close, make_app)

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Serve every registered agent, and follow creations and deletions."""
        await self._adopt_default()
        self.storage.bus.subscribe(TOPIC, self._on_agents)
        pending = await self.storage.agents.list()
        while pending:  # an agent whose mcp.json names another waits for it to be served
            waiting: list[tuple[AgentRecord, UserError]] = []
            for record in pending:
                try:
                    await self._open(record)
                except PeerUnavailable as exc:
                    waiting.append((record, exc))
                except UserError as exc:  # the others are served all the same
                    log.error("agent %r cannot be served by this replica: %s", record.name, exc)
            if len(waiting) == len(pending):
                for record, reason in waiting:
                    log.error("agent %r cannot be served by this replica: %s", record.name, reason)
                break
            pending = [record for record, _ in waiting]

    def begin_stopping(self) -> None:
        if self.stopping_since is None:
            self.stopping_since = time.monotonic()
        for hosted in list(self.agents.values()):
            hosted.server.begin_stopping()

    async def stop(self) -> None:
        async with self._lock:  # callers first: an agent is served before those calling it
            for name in reversed(list(self.agents)):
                await self._close(name)
        await self.storage.close()
        await self._close_storage()

    async def _adopt_default(self) -> None:
        """The agent whose revisions are in the default storage keeps its data there."""
        active = await self.storage.revisions.active()
        if active is None:
            return
        record = await self.storage.revisions.get(active)
        if record is None:
            return
        name = str(record.manifest["agent"]["name"])
        if await self.storage.agents.get(name) is None and await self.storage.agents.add(
            AgentRecord(name, None)
        ):
            log.info("agent %r keeps its data in the default storage", name)

    # -- the agents ------------------------------------------------------------------------

    def agent(self, name: str) -> HostedAgent | None:
        return self.agents.get(name)

    async def create(self, name: str) -> HostedAgent:
        """The agent `name`, registered (in a namespace of its own) and opened on every
        replica if new."""
        check_name(name)
        record = await self.storage.agents.get(name)
        if record is None:
            await self.storage.agents.add(AgentRecord(name, name))  # a racing replica may win
            record = await self.storage.agents.get(name)
            if record is None:  # deleted meanwhile
                raise Conflict(f"agent {name!r} was deleted while being created — deploy again")
            await self.storage.bus.publish(TOPIC, {"name": name, "action": "created"})
        return await self._open(record)

    async def delete(self, name: str) -> dict[str, Any]:
        """Delete agent `name` on every replica: its server closed (its runs stop), its
        namespace dropped. Answers what went with it."""
        record = await self.storage.agents.get(name)
        if record is None:
            raise NotFound(f"no agent {name!r} on this platform — agentctl agents lists them")
        if record.namespace is None:
            raise Conflict(
                f"agent {name!r} keeps its data in the platform's default storage (it was "
                "deployed before the platform hosted several agents), which is not deleted "
                "agent by agent — it stays; to remove it, empty the database and Redis prefix "
                "of the platform (docs/deployment.md, Platform of agents)"
            )
        callers = await self._callers_of(name)
        if callers:
            raise Conflict(
                f"agent {name!r} is called by {', '.join(callers)} (their mcp.json names it) "
                "— deploy them without it first, then delete it"
            )
        hosted = self.agents.get(name)
        counts = await data_counts(hosted.server.storage) if hosted is not None else {}
        await self.storage.agents.remove(name)
        await self.storage.bus.publish(TOPIC, {"name": name, "action": "deleted"})
        async with self._lock:  # closed here before its data goes; the other replicas
            await self._close(name, deleted=True)  # close theirs, the drop waits for them
        dropped = await drop_namespace(self.settings, record.namespace)
        log.info("agent %r deleted", name)
        return {
            "name": name,
            "deleted": counts,
            "schema": dropped.schema,
            "redis_keys": dropped.redis_keys,
            "folder": None if dropped.folder is None else str(dropped.folder),
        }

    async def _callers_of(self, name: str) -> list[str]:
        """The agents whose active revision names agent `name` in mcp.json, read from each
        one's storage (an agent this replica could not serve counts too)."""
        callers = []
        for record in await self.storage.agents.list():
            if record.name == name:
                continue
            hosted = self.agents.get(record.name)
            if hosted is not None:
                manifest = await active_manifest(hosted.server.storage)
            elif record.namespace is None:
                manifest = await active_manifest(self.storage)
            else:
                storage, close = await open_storage(self.settings, record.namespace)
                try:
                    manifest = await active_manifest(storage)
                finally:
                    await storage.close()
                    await close()
            if name in called_agents(manifest):
                callers.append(record.name)
        return sorted(callers)

    async def _open(self, record: AgentRecord) -> HostedAgent:
        async with self._lock:
            hosted = self.agents.get(record.name)
            if hosted is not None:
                return hosted
            peers = InCluster(self.agent, record.name, self.settings.allow_anonymous)
            server = await open_agent_server(self.settings, record.namespace, record.name, peers)
            app = self.make_app(server)
            metrics: Metrics = app.state.metrics
            # Its tasks (runs, crons) log under its name and count in its own metrics.
            lifespan = Lifespan(app, record.name)
            with bind(agent=record.name), metrics.bind():
                try:
                    await lifespan.begin()
                except BaseException:
                    await server.stop()
                    raise
            hosted = HostedAgent(record, server, app, lifespan)
            self.agents[record.name] = hosted
            log.info("serving agent %r", record.name)
            return hosted

    async def _close(self, name: str, *, deleted: bool = False) -> None:
        """Stop serving agent `name`; its runs in flight get the shutdown grace, unless it
        was `deleted` (they stop at once)."""
        hosted = self.agents.pop(name, None)
        if hosted is None:
            return
        if deleted:
            hosted.server.shutdown_grace = 0.0
        hosted.server.begin_stopping()
        await hosted.lifespan.end()
        log.info("stopped serving agent %r", name)

    async def _on_agents(self, message: Message) -> None:
        name = str(message["name"])
        if message.get("action") == "deleted":
            async with self._lock:
                await self._close(name, deleted=True)
            return
        record = await self.storage.agents.get(name)
        if record is not None:
            await self._open(record)


def check_name(name: str) -> None:
    """An agent's name: it is part of its URL, so printable and without `/`."""
    if not name or len(name) > _NAME_LIMIT or "/" in name or not name.isprintable():
        raise Unprocessable(
            f"agent name {name!r}: give [agent].name 1 to {_NAME_LIMIT} printable "
            "characters, no '/' (it names the agent's URL, /agents/<name>)"
        )


async def data_counts(storage: Storage) -> dict[str, int]:
    """How many threads, runs, assistants and crons `storage` holds."""
    everything = Page(limit=1)
    _, threads = await storage.threads.search(ThreadFilter(), everything)
    _, assistants = await storage.assistants.search(AssistantFilter(), everything)
    _, crons = await storage.crons.search(CronFilter(), everything)
    runs = sum((await storage.runs.count_by_status()).values())
    return {"threads": threads, "runs": runs, "assistants": assistants, "crons": crons}


async def active_manifest(storage: Storage) -> dict[str, Any]:
    """The manifest of the active revision in `storage` ({} when there is none)."""
    number = await storage.revisions.active()
    record = None if number is None else await storage.revisions.get(number)
    return {} if record is None else record.manifest


async def runs_in_flight(storage: Storage) -> int:
    """Runs pending or running in `storage`."""
    counts = await storage.runs.count_by_status()
    return sum(counts.get(status, 0) for status in ACTIVE_RUN_STATUSES)


PLATFORM_ROOT = "agentctl.platform_root"  # the scope key: the platform's own root path


def agent_url(request: Request, name: str, public_url: str | None) -> str:
    """The base URL of agent `name` (what the SDKs take): under `public_url`
    (`AGENTCTL_PUBLIC_URL`) when set, else as the caller reaches the platform."""
    if public_url:
        base = public_url.rstrip("/")
    else:
        root = request.scope.get(PLATFORM_ROOT, request.scope.get("root_path", ""))
        base = f"{request.url.scheme}://{request.url.netloc}{root}"
    return f"{base}/agents/{quote(name, safe='')}"
