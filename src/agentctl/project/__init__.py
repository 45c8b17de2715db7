"""The agent project: its typed model, loading and validation, and scaffolding."""

from __future__ import annotations

from agentctl.project.loader import load_project
from agentctl.project.model import (
    AuthConfig,
    McpOAuth,
    McpServer,
    Project,
    SandboxConfig,
    Skill,
    Subagent,
)

__all__ = [
    "AuthConfig",
    "McpOAuth",
    "McpServer",
    "Project",
    "SandboxConfig",
    "Skill",
    "Subagent",
    "load_project",
]
