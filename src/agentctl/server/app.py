"""The ASGI application: the routes, behind the middleware, over one `Server` (its state is
in `server.context`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import Depends, FastAPI

from agentctl._version import __version__
from agentctl.observability.metrics import HttpMetrics, Metrics
from agentctl.observability.tracing import HttpTracing
from agentctl.server import errors, openapi
from agentctl.server.access import AccessPolicy, Authentication
from agentctl.server.context import Server
from agentctl.server.fields import check_url
from agentctl.server.limits import BodyLimit
from agentctl.server.origins import OriginGuard, OriginPolicy
from agentctl.server.platform_host import Platform
from agentctl.server.routes import ROUTERS, agents, console


def running(
    start: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]]
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """An application's lifespan: `start` before it serves, `stop` after."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await start()
        try:
            yield
        finally:
            await stop()

    return lifespan


def create_app(server: Server) -> FastAPI:
    """The application serving `server`, which it starts and stops with its lifespan."""
    app = FastAPI(
        title="agentctl agent server",
        version=__version__,
        description="The LangGraph Platform API for an agent deployed with agentctl.",
        lifespan=running(server.start, server.stop),
        docs_url=None,  # served by routes/docs.py, from the package, not a CDN
        openapi_url="/openapi.json",
        redoc_url=None,
        dependencies=[Depends(check_url)],
        # A path no route has is a 404, not a 307 to a guess with one slash less.
        redirect_slashes=False,
    )
    app.state.server = server
    app.add_middleware(BodyLimit, limits=server.limits)
    app.add_middleware(Authentication, policy=lambda: server.access)
    # Outside authentication: a preflight carries no credentials, and a foreign page's
    # request is refused before anything else looks at it.
    app.add_middleware(OriginGuard, policy=server.origins)
    # Outermost, so 401s and 413s are counted and traced too; see docs/server.md.
    app.state.metrics = metrics = Metrics()  # this app's registry, served by /metrics
    app.add_middleware(HttpMetrics, metrics=metrics)
    app.add_middleware(HttpTracing)  # a pass-through unless tracing is configured
    errors.install(app)
    openapi.install(app)
    for router in ROUTERS:
        app.include_router(router)
    return app


def create_platform_app(platform: Platform, origins: OriginPolicy) -> FastAPI:
    """The platform's own routes, at its root (`routes/agents.py`): `server/dispatch.py`
    hands it what no agent serves. The deployment key only (but `/ok`, `/info` and the
    console's files). Its
    lifespan starts and stops the platform (every agent's server)."""
    app = FastAPI(
        lifespan=running(platform.start, platform.stop),
        title="agentctl platform",
        version=__version__,
        description="The platform of agents deployed with agentctl: each agent's API is "
        "at /agents/{name}.",
        docs_url=None,
        openapi_url=None,
        redoc_url=None,
        redirect_slashes=False,
    )
    app.state.platform = platform
    operator_only = AccessPolicy(api_key=platform.settings.platform_api_key)
    app.add_middleware(Authentication, policy=lambda: operator_only)
    app.add_middleware(OriginGuard, policy=origins)
    errors.install(app)
    app.include_router(console.router)  # the overview of the platform's agents, at /ui/
    app.include_router(agents.router)
    return app
