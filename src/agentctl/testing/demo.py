"""The demo agent project used by the tests and the benchmarks.

A main agent with a skill, a per-user memory template and an MCP server, and two subagents,
one with its own skill and MCP server.
"""

from __future__ import annotations

import json
from pathlib import Path

SKILL = "---\nname: {0}\ndescription: {0} things well\n---\n# {0}\nSteps.\n"


def demo_files(
    calculator_url: str, library_url: str, model: str = "openai:scripted"
) -> dict[str, str]:
    """`{relative path: text}` of the demo project; the MCP urls point at running servers
    (`calculator` over streamable HTTP, `library` over SSE, see `agentctl.testing.mcp_servers`)."""
    return {
        "agent.toml": f'[agent]\nname = "demo"\nmodel = "{model}"\n',
        "AGENTS.md": "You are the demo agent.\n",
        "skills/review/SKILL.md": SKILL.format("review"),
        "user/AGENTS.md": "# About the user\n",
        "mcp.json": json.dumps({"mcpServers": {"calc": {"url": calculator_url}}}),
        "subagents/researcher/agent.toml": (
            '[agent]\nname = "researcher"\ndescription = "Researches a topic"\n'
        ),
        "subagents/researcher/AGENTS.md": "You research.\n",
        "subagents/researcher/skills/search/SKILL.md": SKILL.format("search"),
        "subagents/researcher/mcp.json": json.dumps(
            {"mcpServers": {"library": {"url": library_url, "transport": "sse"}}}
        ),
        "subagents/writer/agent.toml": '[agent]\nname = "writer"\ndescription = "Writes prose"\n',
        "subagents/writer/AGENTS.md": "You write.\n",
    }


def write_demo(
    folder: Path, calculator_url: str, library_url: str, model: str = "openai:scripted"
) -> Path:
    """Write the demo project into `folder` and return it."""
    for rel, text in demo_files(calculator_url, library_url, model).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder
