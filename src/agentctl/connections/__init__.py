"""Users' OAuth connections to an agent's user-owned MCP servers: consent flows, tokens
sealed at rest and refreshed, and calls made as the user (docs/connections.md)."""

from __future__ import annotations

from agentctl.connections.flows import (
    CONNECTION_REQUIRED,
    CompletedFlow,
    ConsentRequest,
    consent_value,
)
from agentctl.connections.sealing import TokenBox
from agentctl.connections.vault import Connections, ConnectionStatus

__all__ = [
    "CONNECTION_REQUIRED",
    "CompletedFlow",
    "ConnectionStatus",
    "Connections",
    "ConsentRequest",
    "TokenBox",
    "consent_value",
]
