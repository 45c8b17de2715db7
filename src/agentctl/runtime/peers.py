"""The other agents of the platform a runtime is served on, which its mcp.json may name
(`"agent": "<name>"`). The platform (`server/peers.py`) implements `Peers`; outside a
platform there is none, and such a server is reached through its `url`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from langchain_core.tools import ToolException

from agentctl.project.model import Project

# The connection to one named agent, for a runtime (`Peers.connection` bound to its project).
AgentConnector = Callable[[str], dict[str, Any]]


class Peers(Protocol):
    def connection(self, agent: str, caller: Project) -> dict[str, Any]:
        """A `langchain-mcp-adapters` connection to the MCP endpoint of `agent`, called
        in-process for whom each call runs, from a revision of `caller`. Raises a
        `UserError` when `agent` cannot be called from there (not served, or it would not
        admit that revision's callers)."""
        ...


class PeerRefused(ToolException):  # type: ignore[misc]
    """A call the called agent would not admit; the model sees why, the run goes on."""
