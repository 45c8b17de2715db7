"""Agents calling agents on one platform.

An agent's mcp.json may name another agent of the platform (`"agent": "<name>"`). Its MCP
endpoint (`/mcp`, the agent as one tool) is then called in-process, through the official
MCP client over an ASGI transport: no network, no load balancer, no token.

The called agent admits a call exactly when it would admit, at its own URL, the one the
calling run runs for (docs/server.md, Agents calling agents):

- a signed-in user, as the same user id, when both agents' `[auth]` admit the same tokens
  (`auth.same_users`): their threads, runs and memory there are theirs;
- the operator, for a run (or a cron's) the deployment key started: every agent's operator;
- anyone else (an anonymous caller, under `AGENTCTL_ALLOW_ANONYMOUS`) only at an agent
  open to anonymous callers, as one.

A revision whose calls would all be refused is refused at deploy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import httpx
from starlette.types import ASGIApp, Receive, Scope, Send

from agentctl.auth import same_users
from agentctl.errors import McpLoadError, PeerUnavailable
from agentctl.observability.logs import bind
from agentctl.project.model import Project
from agentctl.runtime.memory import current_is_operator, current_user_id, in_run
from agentctl.runtime.peers import PeerRefused
from agentctl.server.access import IN_CLUSTER, Caller
from agentctl.server.context import Server

# Never resolved: the transport hands every request to the called agent's application.
IN_CLUSTER_URL = "http://in-cluster/mcp"


class Hosted(Protocol):
    """An agent as this replica serves it."""

    @property
    def name(self) -> str: ...

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
    serves, if any; `anonymous`: whether agents without `[auth]` admit anyone."""

    def __init__(self, find: Callable[[str], Hosted | None], caller: str, anonymous: bool):
        self.find = find
        self.caller = caller
        self.anonymous = anonymous

    def connection(self, agent: str, caller: Project) -> dict[str, Any]:
        if agent == self.caller or self.caller in self._reached_from(agent):
            path = "itself" if agent == self.caller else f'"{agent}", which calls it back'
            raise McpLoadError(
                f'agent "{self.caller}" names {path} in mcp.json — agents that call each '
                "other in a circle never end; remove one of the calls"
            )
        callee = self._callee(agent)
        everyone = self._open(caller)
        if caller.auth is not None and not (_same_users(caller, callee) or self._open(callee)):
            raise self._refused(agent, caller, callee, "its users")
        if everyone and not self._open(callee):
            raise self._refused(agent, caller, callee, "anyone")

        def client(
            headers: dict[str, str] | None = None,
            timeout: httpx.Timeout | None = None,
            auth: httpx.Auth | None = None,
        ) -> httpx.AsyncClient:
            # Made for each tool call, in the calling run: who it runs for is known here.
            hosted = self._served(agent)
            if hosted is None:
                raise PeerRefused(f'agent "{agent}" is no longer served on this platform')
            principal = self._principal(caller, hosted)
            return httpx.AsyncClient(
                transport=httpx.ASGITransport(app=_Call(hosted, principal)),
                headers=headers,
                timeout=timeout,
            )

        return {
            "transport": "streamable_http",
            "url": IN_CLUSTER_URL,
            "httpx_client_factory": client,
        }

    def _principal(self, caller: Project, hosted: Hosted) -> Caller:
        """Who the call being made is at `hosted`: the running graph's user, or the
        operator; `PeerRefused` saying why when `hosted` would not admit them."""
        if not in_run():
            return Caller()  # the revision loading lists the tool
        callee = hosted.server.deployment.runtime.project
        user = current_user_id()
        if user is not None and _same_users(caller, callee):
            return Caller(user=user)
        if current_is_operator() or self._open(callee):
            return Caller()  # every agent's operator; or as anyone is there
        raise PeerRefused(
            f'agent "{hosted.name}" does not admit this call: it admits '
            f"{self._admits(callee)}, this agent {self._admits(caller)} — deploy one of "
            "them with the other's [auth]"
        )

    def _refused(self, agent: str, caller: Project, callee: Project, who: str) -> McpLoadError:
        return McpLoadError(
            f'agent "{agent}" would refuse every call this agent makes for {who}: it admits '
            f"{self._admits(callee)}, this agent {self._admits(caller)} — give both the "
            "same [auth] (provider, issuer, audience and provider settings), or call it by "
            "url with a token of its own"
        )

    def _admits(self, project: Project) -> str:
        auth = project.auth
        if auth is not None:
            shown = " ".join(str(v) for v in (auth.provider, auth.issuer, auth.audience) if v)
            return f"users of [auth] {shown}"
        return "anyone" if self._open(project) else "the deployment key only"

    def _open(self, project: Project) -> bool:
        """Whether an agent of `project` admits anyone, without credentials."""
        return self.anonymous and project.auth is None

    def _served(self, agent: str) -> Hosted | None:
        """Agent `agent` as this replica serves it, with a revision; None otherwise."""
        hosted = self.find(agent)
        return hosted if hosted is not None and hosted.server.deployment.ready else None

    def _callee(self, agent: str) -> Project:
        hosted = self._served(agent)
        if hosted is None:
            raise PeerUnavailable(
                f'mcp.json names agent "{agent}", which has no revision served on this '
                f"platform — deploy {agent} first (agentctl agents lists the platform's agents)"
            )
        return hosted.server.deployment.runtime.project

    def _reached_from(self, agent: str) -> set[str]:
        """Every agent the served revisions call, directly or not, starting from `agent`."""
        reached: set[str] = set()
        pending = [agent]
        while pending:
            hosted = self._served(pending.pop())
            if hosted is None:
                continue
            for name in hosted.server.deployment.runtime.project.called_agents - reached:
                reached.add(name)
                pending.append(name)
        return reached


def _same_users(caller: Project, callee: Project) -> bool:
    return same_users(caller.auth, caller.env, callee.auth, callee.env)


class _Call:
    """The in-process requests of one tool call to agent `hosted`, as `principal`."""

    def __init__(self, hosted: Hosted, principal: Caller) -> None:
        self.hosted, self.principal = hosted, principal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        root = self.hosted.root
        path = root + scope["path"]
        inner = {**scope, "root_path": root, "path": path, IN_CLUSTER: self.principal}
        with bind(agent=self.hosted.name):
            await self.hosted.app(inner, receive, send)
