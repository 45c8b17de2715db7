"""The ASGI application of `agentctl serve`: the platform's agents, each at its own base URL.

- `/agents/{name}/...` goes to that agent's application, under the root path
  `/agents/{name}` (so every SDK works with that base URL, and the docs, the console and
  redirects stay under it); an unknown name is a 404.
- `/ok`, `/metrics` (every agent's, labelled), `/platform/usage` (every agent's, summed),
  `/platform/overview` (the agents side by side, the deploys across them),
  `POST /platform/revisions` and `/platform/agents...` are the platform's own (`routes/agents.py`).
- Any other path at the root goes to the agent when the platform has exactly one (as
  before the platform hosted several); else `/info` and the console (`/ui/`, the platform's
  overview) are the platform's and any other path a 503 (no agent yet) or a 404 (several:
  use their URLs).
"""

from __future__ import annotations

import asyncio

from fastapi import FastAPI
from starlette._utils import get_route_path
from starlette.types import ASGIApp, Receive, Scope, Send

from agentctl.metering import prices
from agentctl.observability.logs import bind
from agentctl.server.access import CONSOLE_PREFIX
from agentctl.server.app import create_app, create_platform_app
from agentctl.server.errors import json_error
from agentctl.server.platform_host import HostedAgent, Platform
from agentctl.server.production import check_platform_settings
from agentctl.server.public_url import PLATFORM_ROOT
from agentctl.settings import Settings

PREFIX = "/agents/"
ROOT_PATHS = frozenset(
    {"/ok", "/metrics", "/platform/agents", "/platform/usage", "/platform/overview"}
)


def is_platform_path(path: str, method: str) -> bool:
    """Whether the platform's own routes answer `path`, whatever agents it hosts."""
    if path in ROOT_PATHS or path.startswith("/platform/agents/"):
        return True
    return path == "/platform/revisions" and method == "POST"  # a deploy names its agent


def is_console_path(path: str) -> bool:
    """The web console's files (`/ui`, `/ui/…`)."""
    return path == CONSOLE_PREFIX or path.startswith(CONSOLE_PREFIX + "/")


class Dispatcher:
    """Hands each request to the application that serves it (see the module's doc), and
    starts and stops the platform with its lifespan."""

    def __init__(self, platform: Platform, root: FastAPI) -> None:
        self.platform = platform
        self.root = root

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.root(scope, receive, send)  # its lifespan starts the platform
            return
        path = get_route_path(scope)
        if path.startswith(PREFIX):
            # The server decoded the path once already: decoding again would let
            # `/agents/%2561lpha` reach `alpha`, past whatever matched the URL as sent.
            name, _, _ = path[len(PREFIX) :].partition("/")
            agent = self.platform.agent(name)
            if agent is None:
                detail = f"no agent {name!r} on this platform — agentctl agents lists them"
                await self._refuse(scope, receive, send, detail)
                return
            root_path = scope.get("root_path", "")
            inner = {**scope, "root_path": root_path + PREFIX + name, PLATFORM_ROOT: root_path}
            await self._to_agent(agent, inner, receive, send)
            return
        agents = list(self.platform.agents.values())
        if is_platform_path(path, scope.get("method", "")) or not agents:
            await self.root(scope, receive, send)  # with no agent: 503 for an agent's path
        elif len(agents) == 1:
            await self._to_agent(agents[0], scope, receive, send)
        elif path == "/info" or is_console_path(path):
            # The platform's facts (its agents listed) and its console: the overview.
            await self.root(scope, receive, send)
        else:
            detail = "this platform hosts several agents — use <url>/agents/<name>"
            await self._refuse(scope, receive, send, detail)

    async def _to_agent(
        self, agent: HostedAgent, scope: Scope, receive: Receive, send: Send
    ) -> None:
        with bind(agent=agent.name):  # every record logged on its requests names it
            await agent.app(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, detail: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4404, "reason": detail[:120]})
            return
        await json_error(404, detail)(scope, receive, send)


async def open_platform(settings: Settings) -> tuple[Platform, ASGIApp]:
    """The platform of `agentctl serve` and its application, which starts and stops it with
    its lifespan. Raises a `UserError` for settings it cannot run with."""
    origins, _ = check_platform_settings(settings)
    await asyncio.to_thread(prices.current)  # as `serve` configured them; read off the loop
    platform = await Platform.open(settings, create_app)
    return platform, Dispatcher(platform, create_platform_app(platform, origins))
