"""The other agents of the platform a runtime is served on, which its mcp.json may name
(`"agent": "<name>"`). The platform (`server/peers.py`) implements `Peers`; outside a
platform there is none, and such a server is reached through its `url`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from agentctl.project.model import AuthConfig

# The connection to one named agent, for a runtime (`Peers.connection` bound to its [auth]).
AgentConnector = Callable[[str], dict[str, Any]]


class Peers(Protocol):
    def connection(self, agent: str, auth: AuthConfig | None) -> dict[str, Any]:
        """A `langchain-mcp-adapters` connection to the MCP endpoint of `agent`, called
        in-process for the user each call runs for, from a revision whose users sign in
        with `auth`. Raises a `UserError` when `agent` cannot be called from there (not
        served, or it would not admit that revision's users)."""
        ...
