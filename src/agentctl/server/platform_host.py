"""The platform of agents `agentctl serve` hosts: one `Server` per agent, each on its own
storage namespace with its own engine, revisions, secrets, `[auth]`, crons and metrics.

The registry of agents (`platform_agents`) is in the default storage; replicas learn of
created and deleted agents over its bus (topic `agents`) and open or close their own
server for each. The bus is best effort, so each replica also reads the registry every
`RECONCILE_SECONDS` (and so at once when it wakes from a freeze): an agent deleted while it
was not listening is closed then, its connections with it. An agent deployed before the
platform hosted several keeps its data in the default storage (namespace None): `start`
registers it so.

Each replica announces what it serves (`server/replicas.py`), so that a deploy answers once
every live replica serves the revision, or says which do not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI

from agentctl.bundle.revision import called_agents
from agentctl.errors import Conflict, NotFound, PeerUnavailable, Unprocessable, UserError
from agentctl.observability.logs import bind
from agentctl.observability.metrics import Metrics
from agentctl.server.context import Server
from agentctl.server.peers import InCluster
from agentctl.server.production import check_platform_settings, open_agent_server
from agentctl.server.replicas import Presence, Rollout, Served
from agentctl.server.sandbox_cleanups import Cleaned, SandboxJanitor
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
from agentctl.storage.outages import outages, service_down

log = logging.getLogger("agentctl.platform")

TOPIC = "agents"
_NAME_LIMIT = 128
RECONCILE_SECONDS = 5.0


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
        # Agents this replica could not open, and why (tried again when created again).
        self.unservable: dict[str, str] = {}
        self._lock = asyncio.Lock()  # one agent opened or closed at a time
        self.stopping_since: float | None = None
        self.presence = Presence(storage.bus, self.served)
        self.janitor = SandboxJanitor(settings, storage.agents)
        self._reconciler: asyncio.Task[None] | None = None

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
                    self._unservable(record.name, exc)
            if len(waiting) == len(pending):
                for record, reason in waiting:
                    self._unservable(record.name, reason)
                break
            pending = [record for record, _ in waiting]
        await self.presence.start()
        self._reconciler = asyncio.create_task(self._reconcile_often(), name="agents-reconcile")
        self.janitor.start()

    def begin_stopping(self) -> None:
        if self.stopping_since is None:
            self.stopping_since = time.monotonic()
        for hosted in list(self.agents.values()):
            hosted.server.begin_stopping()
        self.presence.changed()

    async def stop(self) -> None:
        await self.janitor.stop()
        if self._reconciler is not None:
            self._reconciler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reconciler
        await self.presence.stop()
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
        if record is None:  # a racing replica may win
            await self.storage.agents.add(AgentRecord(name, name, incarnation=uuid.uuid4().hex))
            record = await self.storage.agents.get(name)
            if record is None:  # deleted meanwhile
                raise Conflict(f"agent {name!r} was deleted while being created — deploy again")
            await self.storage.bus.publish(TOPIC, {"name": name, "action": "created"})
        return await self._open(record)

    async def delete(self, name: str) -> dict[str, Any]:
        """Delete agent `name` on every replica: its server closed (its runs stop), its
        namespace dropped, its sandboxes removed (or, while the sandbox service does not
        answer, left to the janitor, which retries). Answers what went with it."""
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
        # An agent that never served a revision has no sandbox (a first deploy refused).
        served = hosted is None or await hosted.server.storage.revisions.active() is not None
        # Noted before the agent is forgotten, so that no crash loses it.
        cleanup = await self.janitor.request(record) if served else None
        await self.storage.agents.remove(name)
        await self.storage.bus.publish(TOPIC, {"name": name, "action": "deleted"})
        async with self._lock:  # closed here before its data goes; the other replicas
            await self._close(name, deleted=True)  # close theirs, the drop waits for them
        cleaned = Cleaned([])
        # Sandboxes in process are this replica's alone (and in the folder dropped next); a
        # shared service's, once no replica runs the agent (after the drop).
        if cleanup is not None and not self.janitor.shared:
            cleaned = await self.janitor.attempt(cleanup)
        dropped = await drop_namespace(self.settings, record.namespace)
        if cleanup is not None and self.janitor.shared:
            cleaned = await self.janitor.attempt(cleanup)
        log.info("agent %r deleted; sandboxes removed: %d%s", name, len(cleaned.removed),
                 "" if cleaned.pending is None else ", the others pending")  # fmt: skip
        return {
            "name": name,
            "deleted": counts,
            "schema": dropped.schema,
            "redis_keys": dropped.redis_keys,
            "folder": None if dropped.folder is None else str(dropped.folder),
            "sandboxes": cleaned.view(),
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
            if await self.storage.agents.get(record.name) != record:
                # Deleted (or deleted and created again) since `record` was read: opening
                # it would create again the schema its deletion drops.
                raise Conflict(f"agent {record.name!r} was deleted meanwhile — deploy again")
            peers = InCluster(self.agent, record.name, self.settings.allow_anonymous)
            server = await open_agent_server(
                self.settings, record.namespace, record.name, peers, record.incarnation
            )
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
            self.unservable.pop(record.name, None)
            if server.deployments is not None:
                server.deployments.on_change = self.presence.changed
            self.presence.changed()
            log.info("serving agent %r", record.name)
            return hosted

    def _unservable(self, name: str, reason: Exception) -> None:
        log.error("agent %r cannot be served by this replica: %s", name, reason)
        self.unservable[name] = str(reason)
        self.presence.changed()

    async def _close(self, name: str, *, deleted: bool = False) -> None:
        """Stop serving agent `name`; its runs in flight get the shutdown grace, unless it
        was `deleted` (they stop at once, and its streams end saying so)."""
        self.unservable.pop(name, None)
        hosted = self.agents.pop(name, None)
        if hosted is None:
            return
        self.presence.changed()
        if deleted:
            hosted.server.begin_deleting()
        else:
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
            await self._try_open(record)

    async def _try_open(self, record: AgentRecord) -> None:
        """Open `record`'s agent; one that cannot be served here is logged and announced."""
        try:
            await self._open(record)
        except UserError as exc:
            if await self.storage.agents.get(record.name) == record:  # not just deleted
                self._unservable(record.name, exc)

    # -- what the bus may not have said ------------------------------------------------------

    async def _reconcile_often(self) -> None:
        while True:
            await asyncio.sleep(RECONCILE_SECONDS)
            try:
                await self.reconcile()
            except Exception as exc:  # the next round tries again
                service = service_down(exc)
                if service is not None:  # the database is away: logged once
                    outages.down(service, exc)
                else:
                    log.warning("catching up with the platform's agents failed: %r", exc)

    async def reconcile(self) -> None:
        """Serve what the registry says, whatever this replica heard on the bus: an agent
        deleted while it was not listening (frozen, or Redis away) is closed, with its
        connections; one created meanwhile is opened; each agent serves its active
        revision."""
        registered = {record.name: record for record in await self.storage.agents.list()}
        for name in [name for name in self.unservable if name not in registered]:
            del self.unservable[name]
            self.presence.changed()
        for name, hosted in list(self.agents.items()):
            if registered.get(name) == hosted.record:
                continue
            async with self._lock:
                if self.agents.get(name) is hosted:  # not closed meanwhile
                    log.warning("agent %r was deleted while this replica was not listening", name)
                    await self._close(name, deleted=True)
        for name, record in registered.items():
            if name not in self.agents and name not in self.unservable:
                await self._try_open(record)
        for name, hosted in list(self.agents.items()):
            deployments = hosted.server.deployments
            if deployments is None or hosted.server.stopping.is_set():
                continue
            try:  # one agent's failure holds back no other's
                await deployments.follow_active()
            except Exception as exc:
                if service_down(exc) is not None:
                    raise
                log.warning("agent %r: catching up with its active revision failed: %r",
                            name, exc)  # fmt: skip

    # -- what this replica serves ------------------------------------------------------------

    def served(self) -> Served:
        """What this replica serves, as it announces it to the others."""
        served = Served(stopping=self.stopping_since is not None)
        for name, hosted in self.agents.items():
            served.agents[name] = hosted.server.deployment.number
            deployments = hosted.server.deployments
            if deployments is not None and deployments.refused is not None:
                number, reason = deployments.refused
                served.refused[name] = {"number": number, "reason": reason}
        for name, reason in self.unservable.items():
            served.refused[name] = {"number": None, "reason": reason}
        return served

    async def rollout(self, name: str, number: int) -> Rollout:
        """Wait until every live replica serves revision `number` of agent `name` (or says
        it cannot), `AGENTCTL_DEPLOY_WAIT_SECONDS` at most."""
        return await self.presence.rollout(name, number, self.settings.deploy_wait_seconds)


def check_name(name: str) -> None:
    """An agent's name: it is part of its URL, so printable and without `/`."""
    if not name or len(name) > _NAME_LIMIT or "/" in name or not name.isprintable():
        raise Unprocessable(
            f"agent name {name!r}: give [agent].name 1 to {_NAME_LIMIT} printable "
            "characters, no '/' (it names the agent's URL, /agents/<name>)"
        )


async def data_counts(storage: Storage) -> dict[str, int]:
    """How many threads, runs, assistants, crons and users' connections to MCP servers
    `storage` holds."""
    everything = Page(limit=1)
    _, threads = await storage.threads.search(ThreadFilter(), everything)
    _, assistants = await storage.assistants.search(AssistantFilter(), everything)
    _, crons = await storage.crons.search(CronFilter(), everything)
    runs = sum((await storage.runs.count_by_status()).values())
    connections = sum((await storage.connections.counts()).values())
    return {
        "threads": threads,
        "runs": runs,
        "assistants": assistants,
        "crons": crons,
        "connections": connections,
    }


async def active_manifest(storage: Storage) -> dict[str, Any]:
    """The manifest of the active revision in `storage` ({} when there is none)."""
    number = await storage.revisions.active()
    record = None if number is None else await storage.revisions.get(number)
    return {} if record is None else record.manifest


async def runs_in_flight(storage: Storage) -> int:
    """Runs pending or running in `storage`."""
    counts = await storage.runs.count_by_status()
    return sum(counts.get(status, 0) for status in ACTIVE_RUN_STATUSES)
