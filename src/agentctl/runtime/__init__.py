"""The agent runtime: a revision becomes a compiled deep agent."""

from __future__ import annotations

from agentctl.runtime.agent import AgentRuntime, load_agent

__all__ = ["AgentRuntime", "load_agent"]
