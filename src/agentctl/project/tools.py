"""The tools a deep agent has before any MCP server's: what `[interrupt_on]` may gate, known
when a project is validated. MCP tools' names are known only once their servers are listed."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from agentctl.project.model import SandboxConfig

FILE_TOOLS = ("ls", "read_file", "write_file", "edit_file", "delete", "glob", "grep")
TASK_TOOL = "task"  # delegates to a subagent; the built-in general-purpose one is always there
EXECUTE_TOOL = "execute"  # runs a shell command: only with a [sandbox]


def builtin_tools(sandbox: SandboxConfig) -> frozenset[str]:
    """The tools every agent of this sandbox setting has."""
    extra = (EXECUTE_TOOL,) if sandbox.enabled else ()
    return frozenset((*FILE_TOOLS, TASK_TOOL, *extra))


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name `name` most likely misspells, if any is close."""
    found = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_tool_hint(name: str, known: Iterable[str]) -> str:
    """What to try first for a gate on `name`, which is not among `known` ("" if nothing):
    a sandbox for `execute`, else the known name it most likely misspells."""
    if name == EXECUTE_TOOL:
        return "add a [sandbox] (execute runs commands in it), or "
    match = closest(name, known)
    return f"did you mean {match}? Or " if match else ""
