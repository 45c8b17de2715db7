"""Agents calling agents on one platform.

An agent's mcp.json may name another agent of the platform (`"agent": "<name>"`). Its MCP
endpoint (`/mcp`, the agent as one tool) is then called in-process, through the official
MCP client over an ASGI transport: no network, no load balancer, no token.

Who the called agent sees (docs/server.md, Agents calling agents) is who the calling run
runs for:

- a signed-in user, with the same user id, when both agents sign users in the same way
  (`[auth]` provider and issuer): their threads, runs and memory there are theirs;
- the operator (no user) for a run started with the deployment key, which every agent of
  the platform admits.

Any other call is refused, so an agent admits nobody through another that it would not
admit at its own URL. A revision whose users another agent would refuse is refused at
deploy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import httpx
from langchain_core.tools import ToolException
from starlette.types import ASGIApp, Receive, Scope, Send

from agentctl.errors import McpLoadError, PeerUnavailable
from agentctl.observability.logs import bind
from agentctl.project.model import AuthConfig
from agentctl.runtime.agent import AgentRuntime
from agentctl.runtime.memory import current_user_id
from agentctl.server.access import IN_CLUSTER, Caller
from agentctl.server.context import Server

# Never resolved: the transport hands every request to the called agent's application.
IN_CLUSTER_URL = "http://in-cluster/mcp"


class Hosted(Protocol):
    """An agent as this replica serves it."""

    @property
    def server(self) -> Server: ...

    @property
    def app(self) -> ASGIApp: ...

    @property
    def root(self) -> str:
        """Its base path on the platform (`/agents/<name>`)."""
        ...


class InCluster:
    """The `Peers` of agent `caller`: `find(name)` is the agent of that name this replica
    serves, if any."""

    def __init__(self, find: Callable[[str], Hosted | None], caller: str) -> None:
        self.find = find
        self.caller = caller

    def connection(self, agent: str, auth: AuthConfig | None) -> dict[str, Any]:
        users = auth  # how the calling revision's users sign in
        if agent == self.caller or self.caller in self._reached_from(agent):
            path = "itself" if agent == self.caller else f'"{agent}", which calls it back'
            raise McpLoadError(
                f'agent "{self.caller}" names {path} in mcp.json — agents that call each '
                "other in a circle never end; remove one of the calls"
            )
        callee = self._callee(agent).project.auth
        if users is not None and not same_sign_in(users, callee):
            raise McpLoadError(
                f'agent "{agent}" does not sign users in as this agent does '
                f"({_sign_in(callee)}, here {_sign_in(users)}), so it would refuse every "
                "call made for this agent's users — give both the same [auth] provider and "
                "issuer, or call it by url with a token of its own"
            )

        def client(
            headers: dict[str, str] | None = None,
            timeout: httpx.Timeout | None = None,
            auth: httpx.Auth | None = None,
        ) -> httpx.AsyncClient:
            # Made for each tool call, in the calling run: who it runs for is known here.
            hosted = self.find(agent)
            if hosted is None:
                raise ToolException(f'agent "{agent}" is no longer on this platform')
            call = _Call(hosted, _principal(hosted, current_user_id(), users))
            return httpx.AsyncClient(
                transport=httpx.ASGITransport(app=call), headers=headers, timeout=timeout
            )

        return {
            "transport": "streamable_http",
            "url": IN_CLUSTER_URL,
            "httpx_client_factory": client,
        }

    def _callee(self, agent: str) -> AgentRuntime:
        hosted = self.find(agent)
        if hosted is None or not hosted.server.deployment.ready:
            raise PeerUnavailable(
                f'mcp.json names agent "{agent}", which has no revision on this platform — '
                f"deploy {agent} first (agentctl agents lists the platform's agents)"
            )
        return hosted.server.deployment.runtime

    def _reached_from(self, agent: str) -> set[str]:
        """Every agent the served revisions call, directly or not, starting from `agent`."""
        reached: set[str] = set()
        pending = [agent]
        while pending:
            hosted = self.find(pending.pop())
            if hosted is None or not hosted.server.deployment.ready:
                continue
            for name in hosted.server.deployment.runtime.project.called_agents - reached:
                reached.add(name)
                pending.append(name)
        return reached


def same_sign_in(one: AuthConfig | None, other: AuthConfig | None) -> bool:
    """Whether two agents' users are the same people: the same provider (and issuer)."""
    if one is None or other is None:
        return False
    return (one.provider, one.issuer) == (other.provider, other.issuer)


def _sign_in(auth: AuthConfig | None) -> str:
    if auth is None:
        return "no [auth]: the deployment key only"
    return f"[auth] {auth.provider}" + (f" {auth.issuer}" if auth.issuer else "")


def _principal(hosted: Hosted, user: str | None, auth: AuthConfig | None) -> Caller:
    """Who a call made for `user` (None: the operator) is at `hosted`; `ToolException`
    with the reason when it would not admit them."""
    if user is None:
        return Caller()
    deployment = hosted.server.deployment
    callee_auth = deployment.runtime.project.auth if deployment.ready else None
    if same_sign_in(auth, callee_auth):
        return Caller(user=user)
    raise ToolException(
        f"this agent's users are not admitted there: it signs users in with "
        f"{_sign_in(callee_auth)}, this agent with {_sign_in(auth)}"
    )


class _Call:
    """The in-process requests of one tool call to agent `hosted`, as `principal`."""

    def __init__(self, hosted: Hosted, principal: Caller) -> None:
        self.hosted, self.principal = hosted, principal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        root = self.hosted.root
        inner = {
            **scope,
            "root_path": root,
            "path": root + scope["path"],
            IN_CLUSTER: self.principal,
        }
        with bind(agent=self.hosted.server.info.get("agent")):
            await self.hosted.app(inner, receive, send)
