"""The server's shared state: the `Server` every route, service and protocol works on, and
how a request finds it. A leaf of the server package: it imports no route or service."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from agentctl.engine import Deployment, RunEngine
from agentctl.engine.crons import CronScheduler
from agentctl.runtime.agent import AgentRuntime
from agentctl.runtime.peers import Peers
from agentctl.sandbox import Sandboxes
from agentctl.server.access import AccessPolicy
from agentctl.server.connections_factory import ConnectionsFactory
from agentctl.server.heap import resettle_heap
from agentctl.server.limits import Limits
from agentctl.server.origins import OriginPolicy
from agentctl.storage.base import Assistant, Storage

if TYPE_CHECKING:
    from agentctl.platform.deployments import Deployments

log = logging.getLogger("agentctl.server")


@dataclass
class Server:
    """Everything the routes, services and protocols use. `app.create_app` starts and stops
    it with the application."""

    storage: Storage
    deployment: Deployment
    engine: RunEngine
    # Who may call, and as whom; the default lets no one in.
    access: AccessPolicy = field(default_factory=AccessPolicy)
    # Which web pages may call it; the default: none but its own.
    origins: OriginPolicy = field(default_factory=OriginPolicy)
    # What one request may cost (docs/server.md, Limits).
    limits: Limits = field(default_factory=Limits)
    # Facts shown by `/info`.
    info: dict[str, Any] = field(default_factory=dict)
    # Revisions pushed by `agentctl deploy` (`serve` only).
    deployments: Deployments[AccessPolicy] | None = None
    # On stop, how long runs in flight may take to finish before they are handed over,
    # counted from `stopping_since` (when the HTTP server began to stop) when set.
    shutdown_grace: float = 0.0
    stopping_since: float | None = None
    # The platform sandbox service its agents' sandboxes run on (closed with the server).
    sandboxes: Sandboxes | None = None
    # The platform's other agents, which its agent's mcp.json may name (`serve` only).
    peers: Peers | None = None
    # Unique to the agent's registration on the platform (`serve` only; None for an agent
    # registered before incarnations): its sandboxes are named with it, so that an agent
    # deleted and created again under the same name never gets the old one's sandboxes.
    incarnation: str | None = None
    # Builds each revision's users' connections to its user-owned MCP servers (closed with
    # the server); None: no revision of this server may have such servers.
    connections: ConnectionsFactory | None = None
    # Called once the server stopped (e.g. to close what the storage was built on).
    on_close: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    scheduler: CronScheduler = field(init=False)
    _stopped: bool = field(default=False, init=False, repr=False)
    # Set once the HTTP server begins to stop: streams that never end by themselves (a
    # thread's) end then, so their clients reconnect (to another replica) at once.
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    # Set when the agent is deleted from the platform: every stream and long response of
    # it ends with an error saying so (its clients must not wait or reconnect for ever).
    deleted: asyncio.Event = field(default_factory=asyncio.Event)
    # Set once the runs still going on when it stopped were handed back (or it was
    # deleted): the streams following them end, and their clients reconnect to another
    # replica, or to this one started again.
    runs_left: asyncio.Event = field(default_factory=asyncio.Event)
    _stopping_runs: asyncio.Task[None] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.scheduler = CronScheduler(self.storage, self.engine)

    def begin_stopping(self) -> None:
        """The HTTP server stops taking requests: runs in flight get their grace from now."""
        if self.stopping_since is None:
            self.stopping_since = time.monotonic()
        self.stopping.set()
        if self._stopping_runs is None:  # no new run starts here; those in flight get the
            # grace, then go back (their streams end meanwhile: the connections close)
            self._stopping_runs = asyncio.get_running_loop().create_task(
                self._stop_runs(), name="agentctl-stop-runs"
            )

    async def _stop_runs(self) -> None:
        try:
            await self.engine.stop(self.shutdown_grace, cut_short=self.deleted)
        finally:
            self.runs_left.set()

    def begin_deleting(self) -> None:
        """The agent is deleted: its streams end now, its runs stop without a grace."""
        self.deleted.set()
        self.runs_left.set()
        self.shutdown_grace = 0.0
        self.begin_stopping()

    @property
    def public_base(self) -> str | None:
        """The agent's base URL as browsers reach it (`agentctl dev`: its address; `serve`:
        AGENTCTL_PUBLIC_URL's, with /agents/<name> on a platform); None when unknown."""
        return None if self.connections is None else self.connections.public_base

    @property
    def agent_name(self) -> str:
        """The agent's name as the platform knows it (else its graph's, or "the agent")."""
        name = self.info.get("agent")
        if isinstance(name, str):
            return name
        return self.deployment.graph_id if self.deployment.ready else "the agent"

    async def start(self) -> None:
        await self.ensure_default_assistant()
        if self.deployments is not None:
            await self.deployments.start()
        await self.engine.start()
        await self.scheduler.start()

    async def stop(self) -> None:
        """Stop the scheduler and the engine, close the storage; once (later calls return)."""
        if self._stopped:
            return
        self._stopped = True
        self.begin_stopping()
        stopping_runs = self._stopping_runs
        assert stopping_runs is not None
        # Each step is taken whatever became of the one before: a storage that failed to
        # take the runs back (its database went, or its schema is being dropped) is still
        # closed, so that no connection of it is kept.
        steps: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("the cron scheduler", self.scheduler.stop),
            ("the runs", lambda: stopping_runs),
            ("the storage", self.storage.close),
        ]
        if self.sandboxes is not None:
            steps.append(("the sandboxes", self.sandboxes.aclose))
        if self.connections is not None:
            steps.append(("the users' connections", self.connections.aclose))
        steps.extend(("the storage's connections", close) for close in self.on_close)
        if self.access.authenticator is not None:
            steps.append(("the authenticator", self.access.authenticator.aclose))
        for what, step in steps:
            try:
                await step()
            except Exception as exc:
                log.warning("stopping %s of %s failed: %r", what, self.agent_name, exc)

    async def switch(
        self, runtime: AgentRuntime, access: AccessPolicy, number: int | None = None
    ) -> None:
        """Serve `runtime` to new runs (runs in flight finish on theirs) under `access`."""
        self.deployment.swap(runtime, number)
        if access is not self.access:
            replaced, self.access = self.access, access
            if replaced.authenticator is not None:
                await replaced.authenticator.aclose()
        self.info["revision"] = runtime.revision_id
        await self.ensure_default_assistant()
        self.engine.wake()
        resettle_heap()

    def browser_sign_in(self) -> dict[str, str] | None:
        """The OpenID Connect provider and public client the web console signs users in
        with (`[auth] client_id`), or None when it has none."""
        deployment = self.deployment
        auth = deployment.runtime.project.auth if deployment.ready else None
        if auth is None or auth.issuer is None or auth.client_id is None:
            return None
        return {"issuer": auth.issuer, "client_id": auth.client_id}

    async def ensure_default_assistant(self) -> None:
        """The agent itself is an assistant whose id is a uuid5 of its name."""
        deployment = self.deployment
        if not deployment.ready:
            return
        existing = await self.storage.assistants.get(deployment.assistant_id)
        if existing is None:
            await self.storage.assistants.put(
                Assistant(
                    assistant_id=deployment.assistant_id,
                    graph_id=deployment.graph_id,
                    name=deployment.graph_id,
                    metadata={"created_by": "system"},
                )
            )


def server_of(request: Request) -> Server:
    """The `Server` of the application serving `request`."""
    server: Server = request.app.state.server
    return server
