"""agentctl: deploy deep agents written as files, on a server that speaks the LangGraph API."""

from __future__ import annotations

from agentctl._version import __version__
from agentctl.errors import AgentctlError, ConfigError, Problem, UserError

__all__ = ["AgentctlError", "ConfigError", "Problem", "UserError", "__version__"]
