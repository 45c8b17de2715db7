"""The consent request a run may stop at, as the front doors other than the LangGraph API
tell it: a tool of a user-owned MCP server, called by a user who has not connected their
account, interrupts the run with

    {"type": "connection_required", "server", "description", "flow_id",
     "authorization_url", "expires_at", "message"}

A2A shows it as an `auth-required` task, the MCP endpoint as a tool error; both in words
naming the server and the link to open. Once the user connected, the server resumes the run
by itself (a new run on the thread)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentctl.connections import CONNECTION_REQUIRED


def is_connection_request(value: Any) -> bool:
    """Whether an interrupt's value is a consent request."""
    return (
        isinstance(value, dict)
        and value.get("type") == CONNECTION_REQUIRED
        and isinstance(value.get("authorization_url"), str)
    )


def connection_requests(values: Iterable[Any]) -> list[dict[str, Any]]:
    """The consent requests among interrupt values, in order."""
    return [value for value in values if is_connection_request(value)]


def ask_to_connect(request: dict[str, Any]) -> str:
    """One sentence: which server the user must connect, what it is for, and where."""
    server = request.get("server") or "an MCP server"
    described = request.get("description")
    purpose = f" ({described})" if isinstance(described, str) and described else ""
    expires = request.get("expires_at")
    until = f" (the link works until {expires})" if isinstance(expires, str) and expires else ""
    return (
        f"To use {server}{purpose}, the user must connect their own {server} account: "
        f"open {request['authorization_url']}{until}."
    )
