"""`mcp.json`: the remote MCP servers (http and sse only) and `${VAR}` expansion.

A server may name another agent of the same platform (`"agent": "<name>"`) instead of, or
as well as, giving its `url`: on a platform it is called in-process; elsewhere (`agentctl
dev`) through its `url`, when there is one."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentctl.bundle.limits import RevisionLimits
from agentctl.errors import Problem
from agentctl.project.envfile import is_set
from agentctl.project.files import read_text
from agentctl.project.model import McpServer, McpTransport
from agentctl.project.rules import rule, text_problems, valid_name, wrong_type

MCP_FILE = "mcp.json"
SERVERS_KEY = "mcpServers"
SERVER_KEYS = ("url", "agent", "transport", "type", "headers")
TRANSPORTS: dict[str, McpTransport] = {
    "http": "http",
    "streamable_http": "http",
    "streamable-http": "http",
    "streamableHttp": "http",
    "sse": "sse",
}
_SECRET_HEADER = re.compile(r"auth|key|token|secret|password|cookie", re.IGNORECASE)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def referenced_names(text: str) -> list[str]:
    """The variable names a `${VAR}` template refers to, in order."""
    return _VAR.findall(text)


def expand(text: str, env: Mapping[str, str]) -> str:
    """Replace every `${VAR}` with its value. The caller has checked each is set."""
    return _VAR.sub(lambda m: env[m.group(1)], text)


def load_mcp(
    root: Path,
    path: Path,
    env: Mapping[str, str],
    problems: list[Problem],
    limits: RevisionLimits,
) -> tuple[McpServer, ...]:
    """The servers of one mcp.json, reporting every problem with the file's own path."""
    file = path.relative_to(root).as_posix()
    text = read_text(root, path, problems, limits)
    if text is None:
        return ()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(rule("json-syntax").problem(file, error=str(exc)))
        return ()
    except RecursionError:
        problems.append(rule("json-syntax").problem(file, error="nested too deeply"))
        return ()
    problems += text_problems(file, data)
    if not isinstance(data, dict) or not isinstance(data.get(SERVERS_KEY), dict):
        problems.append(rule("mcp-shape").problem(file))
        return ()
    for key in sorted(set(data) - {SERVERS_KEY}):
        problems.append(rule("unknown-key").problem(file, key, allowed=SERVERS_KEY))
    servers = []
    for name, spec in data[SERVERS_KEY].items():
        server = _server(file, name, spec, env, problems)
        if server:
            servers.append(server)
    return tuple(servers)


def _server(
    file: str, name: str, spec: Any, env: Mapping[str, str], problems: list[Problem]
) -> McpServer | None:
    key = f"{SERVERS_KEY}.{name}"
    if not isinstance(spec, dict):
        problems.append(wrong_type(file, key, "an object", spec, '{"url": "…"}'))
        return None
    declared = spec.get("transport", spec.get("type"))
    stdio = "stdio" in (spec.get("transport"), spec.get("type"))
    if stdio or ("command" in spec and "url" not in spec):
        why = "uses the stdio transport" if stdio else 'has a "command" and no "url"'
        problems.append(rule("mcp-stdio").problem(file, key, why=why))
        return None
    before = len(problems)
    for extra in sorted(set(spec) - set(SERVER_KEYS)):
        problems.append(
            rule("unknown-key").problem(file, f"{key}.{extra}", allowed=", ".join(SERVER_KEYS))
        )
    transport = TRANSPORTS.get(declared or "http") if isinstance(declared, str | None) else None
    if transport is None:
        problems.append(rule("mcp-transport").problem(file, f"{key}.transport", value=declared))
    url = spec.get("url")
    headers = spec.get("headers", {})
    agent = _agent(file, key, spec, problems)
    if url is None and "agent" in spec:
        url = ""  # the agent's only
    elif not isinstance(url, str) or not url.strip():
        problems.append(rule("mcp-url").problem(file, f"{key}.url", why="is missing"))
        url = ""
    elif _expands(file, f"{key}.url", url, env, problems) and not re.match(
        r"https?://", expand(url, env)
    ):
        why = f'"{url}" is not an http:// or https:// address'
        problems.append(rule("mcp-url").problem(file, f"{key}.url", why=why))
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        problems.append(
            wrong_type(
                file,
                f"{key}.headers",
                "an object of strings",
                headers,
                '{"Authorization": "Bearer ${TOKEN}"}',
            )
        )
        headers = {}
    for header, value in headers.items():
        where = f"{key}.headers.{header}"
        if _SECRET_HEADER.search(header) and not referenced_names(value):
            problems.append(rule("mcp-literal-secret").problem(file, where))
        _expands(file, where, value, env, problems)
    if len(problems) > before or transport is None:
        return None
    names = referenced_names(url) + [n for v in headers.values() for n in referenced_names(v)]
    return McpServer(
        name=name,
        transport=transport,
        url=url,
        headers=dict(headers),
        env_names=tuple(dict.fromkeys(names)),
        agent=agent,
    )


def _agent(file: str, key: str, spec: dict[str, Any], problems: list[Problem]) -> str | None:
    """The platform agent a server names, if any (reported when not an agent's name)."""
    if "agent" not in spec:
        return None
    agent = spec["agent"]
    if isinstance(agent, str) and valid_name(agent):
        return agent
    why = f"{agent!r} is not an agent's name (1 to 64 letters, digits, '-' or '_')"
    problems.append(rule("mcp-agent").problem(file, f"{key}.agent", why=why))
    return None


def _expands(
    file: str, key: str, text: str, env: Mapping[str, str], problems: list[Problem]
) -> bool:
    unset = [n for n in dict.fromkeys(referenced_names(text)) if not is_set(env, n)]
    for name in unset:
        problems.append(rule("env-unset").problem(file, key, name=name))
    return not unset
