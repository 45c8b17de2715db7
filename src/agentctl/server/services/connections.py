"""Users' connections to the agent's user-owned MCP servers, as the HTTP routes and other
front doors use them: listing and revoking them, starting a consent flow, sending the
browser to the provider, and the provider's callback — which stores the token, lists the
server's tools into the catalog and resumes the run that waited for it, as its user.

The OAuth work itself (discovery, PKCE, the token exchange, refresh, sealing) is
`agentctl.connections`; every state lives in the agent's storage, so a flow begun on one
replica ends on any other."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentctl.connections import CompletedFlow, Connections
from agentctl.connections.flows import FLOW_TTL
from agentctl.errors import NotFound
from agentctl.project.model import McpServer
from agentctl.server.access import Caller
from agentctl.server.context import Server
from agentctl.server.run_requests import CommandBody, RunCreate
from agentctl.server.services.runs import start_run

log = logging.getLogger("agentctl.server")


def user_owned(server: Server) -> dict[str, McpServer]:
    """The user-owned MCP servers of the revision served (the agent's and its subagents'),
    by name; none before a revision is active."""
    if not server.deployment.ready:
        return {}
    return server.deployment.runtime.project.user_owned_servers


def hub(server: Server) -> Connections:
    """The connections of the revision served."""
    connections = _connections(server)
    if connections is None:
        raise NotFound("this agent has no user-owned MCP servers")
    return connections


def _connections(server: Server) -> Connections | None:
    runtime = server.deployment.runtime if server.deployment.ready else None
    connections = None if runtime is None else runtime.connections
    return connections if isinstance(connections, Connections) else None


def known(server: Server, name: str) -> McpServer:
    """The user-owned server `name`, else 404 naming the ones there are."""
    servers = user_owned(server)
    if name not in servers:
        listed = ", ".join(sorted(servers)) or "none"
        raise NotFound(
            f"{name!r} is not a user-owned MCP server of this agent (they are: {listed})"
        )
    return servers[name]


async def user_view(server: Server, user: str) -> list[dict[str, Any]]:
    """Every user-owned server, and whether `user` connected it (never a token)."""
    if not user_owned(server):
        return []
    return [status.as_json() for status in await hub(server).list(user)]


async def operator_view(server: Server) -> list[dict[str, Any]]:
    """Every user-owned server and how many users connected it."""
    servers = user_owned(server)
    counts = await server.storage.connections.counts()
    return [
        {"server": name, "description": config.description, "users": counts.get(name, 0)}
        for name, config in sorted(servers.items())
    ]


async def disconnect(server: Server, user: str, name: str | None = None) -> int:
    """Remove `user`'s connection to `name` (None: all of theirs) everywhere, revoked at the
    provider (best effort): a server mcp.json no longer names included. 404 when `name` is
    neither a user-owned server nor a connection of `user`."""
    connections = _connections(server)
    if connections is not None:
        removed = await connections.revoke(user, name)
    else:  # no user-owned server left: nothing to revoke with, the rows go all the same
        removed = await server.storage.connections.delete(user, name)
        await server.storage.connections.delete_flows(user, name)
    if name is not None and not removed:
        known(server, name)
    return removed


async def begin(
    server: Server,
    user: str,
    name: str,
    *,
    thread_id: str | None = None,
    assistant_id: str | None = None,
) -> dict[str, Any]:
    """A new consent flow of `user` for `name`: its id, authorization URL and expiry."""
    known(server, name)
    request = await hub(server).begin(user, name, thread_id=thread_id, assistant_id=assistant_id)
    return {
        "flow_id": request.flow_id,
        "authorization_url": request.authorization_url,
        "expires_at": request.expires_at,
    }


async def flow_view(server: Server, flow_id: str, user: str) -> dict[str, Any]:
    """The flow `flow_id` of `user` as the console's page shows it (anyone else's, or none:
    404): the server, what it is for, the user, the agent, the thread waiting for it, when it
    expires and its `status` — `pending` (it may go on to the provider), `used` (it went
    there already), `done` (connected) or `expired`."""
    flow = await server.storage.connections.get_flow(flow_id) if _plausible(flow_id) else None
    if flow is None or flow.user_id != user:
        raise NotFound("no such connection request of yours — start connecting again")
    config = known(server, flow.server)
    if flow.status == "done":
        status = "done"
    elif flow.expires_at <= datetime.now(UTC):
        status = "expired"
    else:
        status = "pending" if flow.status == "pending" else "used"
    return {
        "flow_id": flow.flow_id,
        "server": flow.server,
        "description": config.description,
        "user": flow.user_id,
        "agent": server.agent_name,
        "thread_id": flow.thread_id,
        "expires_at": flow.expires_at,
        "status": status,
    }


@dataclass(frozen=True)
class Redirect:
    url: str  # the provider's authorization URL (from its metadata, never from a request)
    binding: str  # the browser-binding cookie's value
    max_age: int  # seconds the cookie is good for


async def redirect(server: Server, flow_id: str, user: str) -> Redirect:
    """Send the browser of flow `flow_id` of `user` (anyone else's: 404) to the provider: its
    authorization URL and the binding the callback will check. Once per flow."""
    if not _plausible(flow_id):
        raise NotFound("no such connection request — start connecting again")
    url, binding = await hub(server).redirect(flow_id, user_id=user)
    return Redirect(url, binding, int(FLOW_TTL.total_seconds()))


@dataclass(frozen=True)
class Completed:
    server: str
    resumed: bool
    thread_id: str | None


async def complete(server: Server, query: Mapping[str, str], binding: str | None) -> Completed:
    """The provider's callback: the token exchanged and stored, the server's tools listed
    into its catalog, and the run waiting for the flow resumed as its user."""
    connections = hub(server)
    flow = await connections.complete(
        query.get("state"),
        query.get("code"),
        binding,
        error=query.get("error"),
        error_description=query.get("error_description"),
    )
    try:
        await connections.list_tools(flow.user_id, flow.server)
    except Exception as exc:  # the connection stands; the catalog is listed at the next call
        log.warning("listing the tools of %s after a connection failed: %s", flow.server, exc)
    return Completed(flow.server, await resume(server, flow), flow.thread_id)


async def resume(server: Server, flow: CompletedFlow) -> bool:
    """Resume the thread of `flow` as its user, if it still waits on that flow's interrupt:
    a new run answering that interrupt (the tool call is then made again, as the user)."""
    if flow.thread_id is None or flow.assistant_id is None:
        return False
    thread = await server.storage.threads.get(flow.thread_id)
    if thread is None or thread.status != "interrupted":
        return False
    waiting = [
        interrupt["id"]
        for pending in thread.interrupts.values()
        for interrupt in pending
        if isinstance(interrupt, dict)
        and isinstance(interrupt.get("value"), dict)
        and interrupt["value"].get("flow_id") == flow.flow_id
        and interrupt.get("id")
    ]
    if not waiting:
        return False
    body = RunCreate(
        assistant_id=flow.assistant_id,
        command=CommandBody(resume={waiting[0]: {"connected": True}}),
        multitask_strategy="enqueue",
    )
    try:
        await start_run(server, Caller(user=flow.user_id), body, flow.thread_id)
    except Exception as exc:  # the user can still answer the interrupt themselves
        log.warning("resuming thread %s after a connection failed: %s", flow.thread_id, exc)
        return False
    return True


def public_base(server: Server) -> str | None:
    """The agent's base URL as browsers and providers reach it (its callback is under it)."""
    return server.public_base


def _plausible(flow_id: str) -> bool:
    return 16 <= len(flow_id) <= 128 and all(c.isalnum() or c in "-_" for c in flow_id)
