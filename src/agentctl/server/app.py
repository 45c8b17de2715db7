"""The ASGI application: one `Server` (storage, engine, deployment) behind the routes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request

from agentctl._version import __version__
from agentctl.engine import Deployment, RunEngine
from agentctl.engine.crons import CronScheduler
from agentctl.server import errors
from agentctl.server.access import AccessPolicy, Authentication
from agentctl.server.limits import BodyLimit
from agentctl.storage.base import Assistant, Storage


@dataclass
class Server:
    """Everything the routes use. `create_app` starts and stops it with the application."""

    storage: Storage
    deployment: Deployment
    engine: RunEngine
    # Who may call, and as whom; the default lets no one in.
    access: AccessPolicy = field(default_factory=AccessPolicy)
    # Facts shown by `/info` (and later the deployment's settings).
    info: dict[str, Any] = field(default_factory=dict)
    scheduler: CronScheduler = field(init=False)

    def __post_init__(self) -> None:
        self.scheduler = CronScheduler(self.storage, self.engine)

    async def start(self) -> None:
        await self.ensure_default_assistant()
        await self.engine.start()
        await self.scheduler.start()

    async def stop(self) -> None:
        await self.scheduler.stop()
        await self.engine.stop()
        await self.storage.close()
        if self.access.authenticator is not None:
            await self.access.authenticator.aclose()

    async def ensure_default_assistant(self) -> None:
        """The agent itself is an assistant whose id is a uuid5 of its name."""
        deployment = self.deployment
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
    server: Server = request.app.state.server
    return server


def create_app(server: Server) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await server.start()
        try:
            yield
        finally:
            await server.stop()

    app = FastAPI(
        title="agentctl agent server",
        version=__version__,
        description="The LangGraph Platform API for an agent deployed with agentctl.",
        lifespan=lifespan,
        docs_url="/docs",
        openapi_url="/openapi.json",
        redoc_url=None,
    )
    app.state.server = server
    app.add_middleware(BodyLimit)
    app.add_middleware(Authentication, policy=lambda: server.access)  # outermost: runs first
    errors.install(app)
    from agentctl.server.routes import ROUTERS

    for router in ROUTERS:
        app.include_router(router)
    return app
