"""`mcp.json`: the remote MCP servers (http and sse only) and `${VAR}` expansion.

A server may name another agent of the same platform (`"agent": "<name>"`) instead of, or
as well as, giving its `url`: on a platform it is called in-process; elsewhere (`agentctl
dev`) through its `url`, when there is one.

A server with `oauth` (even `{}`) is user-owned: each user connects their own account, and
its calls carry that user's token; without it, the server is the agent's (its `headers`)."""

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
from agentctl.project.model import McpOAuth, McpServer, McpTransport
from agentctl.project.rules import kind_of, rule, text_problems, valid_name, wrong_type

MCP_FILE = "mcp.json"
SERVERS_KEY = "mcpServers"
SERVER_KEYS = ("url", "agent", "transport", "type", "headers", "description", "oauth")
OAUTH_KEYS = ("scopes", "client_id", "client_secret")
TRANSPORTS: dict[str, McpTransport] = {
    "http": "http",
    "streamable_http": "http",
    "streamable-http": "http",
    "streamableHttp": "http",
    "sse": "sse",
}
_SECRET_HEADER = re.compile(r"auth|key|token|secret|password|cookie", re.IGNORECASE)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_OAUTH_EXAMPLE = '{"scopes": ["notes.read"]}'


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
    description = _description(file, key, spec, problems)
    oauth = _oauth(file, key, spec, env, problems)
    if "oauth" in spec and "agent" in spec:
        problems.append(rule("mcp-oauth-agent").problem(file, f"{key}.oauth"))
    for header in headers:
        if "oauth" in spec and header.lower() == "authorization":
            problems.append(rule("mcp-oauth-header").problem(file, f"{key}.headers.{header}"))
    if len(problems) > before or transport is None:
        return None
    templates = [url, *headers.values()]
    if oauth is not None:
        templates += [oauth.client_id or "", oauth.client_secret or ""]
    return McpServer(
        name=name,
        transport=transport,
        url=url,
        headers=dict(headers),
        env_names=tuple(dict.fromkeys(n for text in templates for n in referenced_names(text))),
        agent=agent,
        description=description,
        oauth=oauth,
    )


def _description(file: str, key: str, spec: dict[str, Any], problems: list[Problem]) -> str | None:
    """What the server is for, in the user's words (shown when a user is asked to connect)."""
    description = spec.get("description")
    if description is None:
        return None
    if not isinstance(description, str):
        example = '"Your notes in Example Notes"'
        problems.append(wrong_type(file, f"{key}.description", "a string", description, example))
        return None
    if not description.strip():
        fix = 'say what the server is for (users asked to connect read it), or remove "description"'
        problems.append(rule("empty").problem(file, f"{key}.description", fix=fix))
        return None
    return description.strip()


def _oauth(
    file: str, key: str, spec: dict[str, Any], env: Mapping[str, str], problems: list[Problem]
) -> McpOAuth | None:
    """`oauth` of a user-owned server; None when there is none (or it is broken: reported)."""
    if "oauth" not in spec:
        return None
    key, oauth = f"{key}.oauth", spec["oauth"]
    if not isinstance(oauth, dict):
        problems.append(wrong_type(file, key, "an object", oauth, _OAUTH_EXAMPLE))
        return None
    before = len(problems)
    for extra in sorted(set(oauth) - set(OAUTH_KEYS)):
        problems.append(
            rule("unknown-key").problem(file, f"{key}.{extra}", allowed=", ".join(OAUTH_KEYS))
        )
    scopes = _scopes(file, f"{key}.scopes", oauth.get("scopes", []), problems)
    client_id = oauth.get("client_id")
    if client_id is not None and (not isinstance(client_id, str) or not client_id.strip()):
        problems.append(
            wrong_type(file, f"{key}.client_id", "a non-empty string", client_id, '"${CLIENT_ID}"')
        )
    elif client_id is not None:
        _expands(file, f"{key}.client_id", client_id, env, problems)
    secret = oauth.get("client_secret")
    if secret is not None and not isinstance(secret, str):
        problems.append(
            wrong_type(file, f"{key}.client_secret", "a string", secret, '"${CLIENT_SECRET}"')
        )
    elif secret is not None:
        if _VAR.fullmatch(secret) is None:
            problems.append(rule("mcp-oauth-secret").problem(file, f"{key}.client_secret"))
        elif client_id is None:
            problems.append(rule("mcp-oauth-client").problem(file, f"{key}.client_secret"))
        _expands(file, f"{key}.client_secret", secret, env, problems)
    if len(problems) > before:
        return None
    return McpOAuth(scopes=scopes, client_id=client_id, client_secret=secret)


def _scopes(file: str, key: str, scopes: Any, problems: list[Problem]) -> tuple[str, ...]:
    """The scopes asked for: a list of single words (OAuth joins them with spaces)."""
    if not isinstance(scopes, list):
        why = f"must be a list of strings, not {kind_of(scopes)}"
        problems.append(rule("mcp-oauth-scopes").problem(file, key, why=why))
        return ()
    for index, scope in enumerate(scopes):
        if not isinstance(scope, str):
            why = f"must be a string, not {kind_of(scope)}"
        elif not scope:
            why = "is empty"
        elif re.search(r"\s", scope):
            why = f'"{scope}" holds a space: one scope each'
        else:
            continue
        problems.append(rule("mcp-oauth-scopes").problem(file, f"{key}[{index}]", why=why))
    return tuple(dict.fromkeys(s for s in scopes if isinstance(s, str)))


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
