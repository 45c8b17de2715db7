"""Loading and validating an agent project. Every problem is collected, then raised at once."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from agentctl.bundle.dependencies import MODEL_PROVIDERS
from agentctl.bundle.limits import RevisionLimits
from agentctl.errors import ConfigError, Problem
from agentctl.project.envfile import read_env_file
from agentctl.project.files import check_bundled, is_hidden, read_text, relative
from agentctl.project.mcp import MCP_FILE, load_mcp
from agentctl.project.model import (
    AUTH_PROVIDERS,
    BUDGET_KEYS,
    DECISIONS,
    SANDBOX_PROVIDERS,
    SANDBOX_SCOPES,
    ApprovalGate,
    AuthConfig,
    Budgets,
    McpServer,
    Project,
    SandboxConfig,
    Skill,
    Subagent,
)
from agentctl.project.rules import kind_of, rule, valid_name, wrong_type
from agentctl.project.secret_scan import find_leaks
from agentctl.project.skills import load_skills
from agentctl.project.toml_schema import MAIN_SCHEMA, SUBAGENT_SCHEMA, check_schema, read_toml
from agentctl.project.tools import builtin_tools, unknown_tool_hint

CONFIG_FILE = "agent.toml"
INSTRUCTIONS_FILE = "AGENTS.md"
SKILLS_DIR = "skills"
USER_DIR = "user"
SUBAGENTS_DIR = "subagents"
DEFAULT_MODEL = "openai:gpt-4.1"
GENERAL_PURPOSE = "general-purpose"  # the built-in subagent's name


def load_project(
    config: str | Path = CONFIG_FILE,
    environ: Mapping[str, str] | None = None,
    limits: RevisionLimits | None = None,
) -> Project:
    """Load and validate the project whose agent.toml is `config` (or a folder holding one).

    `.env` in the project root is read first; `environ` (default: `os.environ`) overrides it.
    The files a revision holds must fit in `limits` (default: the default limits), checked
    by their sizes on disk before any is read. Raises `ConfigError` with every problem found.
    """
    limits = limits or RevisionLimits()
    path = Path(config)
    if path.is_dir():
        path = path / CONFIG_FILE
    path = path.absolute()
    root = path.parent
    if not path.is_file():
        raise ConfigError([rule("config-missing").problem(str(config))])
    problems: list[Problem] = []
    dotenv, env_problems = read_env_file(root)
    problems += env_problems
    env = {**dotenv, **(os.environ if environ is None else environ)}
    data = read_toml(root, path, problems, limits)
    config_file = relative(root, path)
    sections: dict[str, dict[str, str]] = {}
    agent = None
    if data is not None:
        sections = check_schema(config_file, data, MAIN_SCHEMA, problems)
        agent = _agent_section(config_file, data, sections, problems)
    name = _name(config_file, data, agent, problems)
    model = (agent or {}).get("model", DEFAULT_MODEL)
    _check_model(config_file, model, problems)
    description = _description(config_file, agent, problems)
    sandbox = _sandbox(config_file, sections.get("sandbox", {}), problems)
    auth = _auth(config_file, data or {}, sections.get("auth"), problems)
    gates = approval_gates(config_file, (data or {}).get("interrupt_on"), problems)
    budgets = _budgets(config_file, sections.get("budgets"), (data or {}).get("budgets"), problems)
    instructions = _instructions(root, root / INSTRUCTIONS_FILE, problems, limits)
    skills = load_skills(root, root / SKILLS_DIR, problems, limits)
    user_template = _user_template(root, problems, limits)
    mcp_servers = _mcp(root, root, env, problems, limits)
    subagents = _subagents(root, env, problems, limits)
    if not mcp_servers and not any(sub.mcp_servers for sub in subagents):
        # With MCP servers, their tools' names are known when the revision loads: checked then.
        _check_gated_tools(config_file, data or {}, builtin_tools(sandbox), problems)
    files = [config_file, INSTRUCTIONS_FILE]
    files += [f for skill in skills for f in skill.files]
    if (root / USER_DIR / INSTRUCTIONS_FILE).is_file():
        files.append(f"{USER_DIR}/{INSTRUCTIONS_FILE}")
    if (root / MCP_FILE).is_file():
        files.append(MCP_FILE)
    files += [f for sub in subagents for f in sub.files]
    contents = check_bundled(root, [f for f in files if (root / f).exists()], problems, limits)
    _check_no_secrets(contents, dotenv, problems)
    if problems:
        raise ConfigError(problems)
    return Project(
        root=root,
        config_file=config_file,
        name=name,
        model=model,
        instructions=cast(str, instructions),
        description=description,
        sandbox=sandbox,
        auth=auth,
        interrupt_on=gates,
        budgets=budgets,
        skills=skills,
        user_template=user_template,
        subagents=subagents,
        mcp_servers=mcp_servers,
        files=tuple(sorted(files)),
        contents=contents,
        env=env,
    )


def _agent_section(
    file: str, data: dict[str, Any], sections: dict[str, dict[str, str]], problems: list[Problem]
) -> dict[str, str] | None:
    """The [agent] table, or None (reported) when the section is missing."""
    if "agent" not in data:
        example = '[agent]\nname = "my-agent"'
        problems.append(rule("section-missing").problem(file, "[agent]", example=example))
        return None
    return sections.get("agent")  # None when [agent] is not a table (reported already)


def _declared(data: dict[str, Any] | None, key: str) -> bool:
    """Whether `[agent].key` is written at all (a value of the wrong type counts)."""
    agent = (data or {}).get("agent")
    return isinstance(agent, dict) and key in agent


def _name(
    file: str, data: dict[str, Any] | None, agent: dict[str, str] | None, problems: list[Problem]
) -> str:
    """`[agent].name`, reported when missing; "" when absent or unusable."""
    if agent is None:
        return ""
    name = agent.get("name")
    if name is None:
        if not _declared(data, "name"):
            example = 'name = "my-agent"'
            problems.append(rule("required").problem(file, "[agent].name", example=example))
        return ""
    if not valid_name(name):
        problems.append(rule("name-invalid").problem(file, "[agent].name", value=name))
    return name


def _description(file: str, agent: dict[str, str] | None, problems: list[Problem]) -> str | None:
    """`[agent].description` (None when absent); reported when blank."""
    description = (agent or {}).get("description")
    if description is not None and not description.strip():
        fix = "say what the agent does (its A2A card shows it), or remove the key"
        problems.append(rule("empty").problem(file, "[agent].description", fix=fix))
        return None
    return description.strip() if description is not None else None


def _check_model(file: str, model: str, problems: list[Problem]) -> None:
    provider, sep, model_name = model.partition(":")
    if not sep or not provider.strip() or not model_name.strip():
        example = DEFAULT_MODEL if sep or not model.strip() else f"openai:{model.strip()}"
        problems.append(
            rule("model-format").problem(file, "[agent].model", value=model, example=example)
        )
    elif provider not in MODEL_PROVIDERS:
        allowed = ", ".join(sorted(MODEL_PROVIDERS))
        problems.append(
            rule("model-provider-unknown").problem(
                file, "[agent].model", provider=provider, allowed=allowed
            )
        )


def _sandbox(file: str, section: dict[str, str], problems: list[Problem]) -> SandboxConfig:
    fields: dict[str, Any] = {}
    for key, allowed in (("provider", SANDBOX_PROVIDERS), ("scope", SANDBOX_SCOPES)):
        if key in section:
            if section[key] in allowed:
                fields[key] = section[key]
            else:
                problems.append(
                    rule("value-not-allowed").problem(
                        file, f"[sandbox].{key}", value=section[key], allowed=", ".join(allowed)
                    )
                )
    for key in ("template", "image"):
        if key in section:
            if section[key].strip():
                fields[key] = section[key].strip()
            else:
                fix = f"remove it to use the default {MAIN_SCHEMA['sandbox'][key]}, or name one"
                problems.append(rule("empty").problem(file, f"[sandbox].{key}", fix=fix))
    return SandboxConfig(**fields)


def _auth(
    file: str, data: dict[str, Any], section: dict[str, str] | None, problems: list[Problem]
) -> AuthConfig | None:
    if "auth" not in data or section is None:
        return None
    provider = section.get("provider")
    if provider is None:
        problems.append(
            rule("required").problem(file, "[auth].provider", example='provider = "idp_a"')
        )
        return None
    if provider not in AUTH_PROVIDERS:
        problems.append(
            rule("value-not-allowed").problem(
                file, "[auth].provider", value=provider, allowed=", ".join(AUTH_PROVIDERS)
            )
        )
        return None
    if provider != "oidc":
        allowed = (
            f'provider (issuer, audience and client_id are for provider = "oidc", not "{provider}")'
        )
        problems += [
            rule("unknown-key").problem(file, f"[auth].{key}", allowed=allowed)
            for key in (*_OIDC_KEYS, "client_id")
            if key in section
        ]
        return AuthConfig(provider=provider)
    before = len(problems)
    for key in _OIDC_KEYS:
        _oidc_value(file, key, section.get(key), _declared_in(data, "auth", key), problems)
    client_id = section.get("client_id")
    if client_id is not None and not client_id.strip():
        fix = _OIDC_FIXES["client_id"]
        problems.append(rule("empty").problem(file, "[auth].client_id", fix=fix))
    issuer, audience = section.get("issuer"), section.get("audience")
    if len(problems) > before or issuer is None or audience is None:
        return None  # wrong types were reported by the schema check
    return AuthConfig(provider="oidc", issuer=issuer, audience=audience, client_id=client_id)


_OIDC_KEYS = ("issuer", "audience")  # required; `client_id` is optional
_OIDC_FIXES = {
    "issuer": "set it to your identity provider's issuer URL, e.g. https://login.example.com",
    "audience": "set it to the audience (client id) your identity provider puts in tokens' aud",
    "client_id": "set it to the id of the public client the web console signs in with, or "
    "leave client_id out",
}


# The largest limit a budget takes (beyond it, no budget is needed).
MAX_BUDGET = 10**15
_BUDGET_MEANINGS = {
    "tokens": "input and output tokens {who} may use per UTC day",
    "cost": "US dollars {who} may spend per UTC day",
    "runs": "runs {who} may start per minute",
}


def _budgets(
    file: str, section: dict[str, str] | None, table: Any, problems: list[Problem]
) -> Budgets:
    """`[budgets]`: positive numbers (integers but for costs); unknown keys and a section
    that is no table are reported by the schema check."""
    if section is None or not isinstance(table, dict):
        return Budgets()
    values: dict[str, Any] = {}
    for key in BUDGET_KEYS:
        if key in table:
            value = table[key]
            if _budget_value(key, value):
                values[key] = value
            else:
                problems.append(_budget_problem(file, key, value))
    return Budgets(**values)


def _budget_value(key: str, value: Any) -> bool:
    """Whether `value` is a limit `key` takes: a positive integer (a positive number for a
    cost), finite, at most MAX_BUDGET."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, float) and "_cost_" not in key:
        return False
    return 0 < value <= MAX_BUDGET  # false for NaN too


def _budget_problem(file: str, key: str, value: Any) -> Problem:
    who, what = key.split("_")[:2]
    expected = "a positive number" if what == "cost" else "a positive integer"
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and value > MAX_BUDGET:
        expected += f" up to {MAX_BUDGET:,}"
    meaning = _BUDGET_MEANINGS[what].format(
        who="one user" if who == "user" else "all users together"
    )
    return rule("budget-invalid").problem(
        file,
        f"[budgets].{key}",
        expected=expected,
        actual=str(value) if number else kind_of(value),
        example=f"{key} = {MAIN_SCHEMA['budgets'][key]}",
        meaning=meaning,
    )


def _declared_in(data: dict[str, Any], section: str, key: str) -> bool:
    """Whether `[section].key` is written at all (a value of the wrong type counts)."""
    table = data.get(section)
    return isinstance(table, dict) and key in table


def _oidc_value(
    file: str, key: str, value: str | None, declared: bool, problems: list[Problem]
) -> None:
    """Check `[auth].issuer` or `[auth].audience` of `provider = "oidc"`."""
    where = f"[auth].{key}"
    example = f"{key} = {MAIN_SCHEMA['auth'][key]}"
    if value is None:
        if not declared:  # a value of the wrong type is reported already
            problems.append(rule("required").problem(file, where, example=example))
    elif not value.strip():
        problems.append(rule("empty").problem(file, where, fix=_OIDC_FIXES[key]))
    elif key == "issuer" and not _is_issuer_url(value):
        problems.append(
            rule("wrong-type").problem(
                file,
                where,
                expected="an http:// or https:// URL without query or fragment",
                actual=f'"{value}"',
                example=example,
            )
        )


def _is_issuer_url(value: str) -> bool:
    if value != value.strip() or any(c.isspace() for c in value):
        return False
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False
    return parts.scheme in ("http", "https") and bool(host) and not ({"?", "#"} & set(value))


def _check_gated_tools(
    file: str, data: dict[str, Any], tools: frozenset[str], problems: list[Problem]
) -> None:
    """Every `[interrupt_on]` key must name one of `tools` (a typo would gate nothing)."""
    table = data.get("interrupt_on")
    if not isinstance(table, dict):
        return
    allowed = ", ".join(sorted(tools))
    for tool in table:
        if tool not in tools:
            problems.append(
                rule("interrupt-on-unknown-tool").problem(
                    file,
                    f"[interrupt_on].{tool}",
                    value=tool,
                    hint=unknown_tool_hint(tool, tools),
                    allowed=allowed,
                )
            )


def approval_gates(file: str, table: Any, problems: list[Problem]) -> dict[str, ApprovalGate]:
    """`[interrupt_on]`: tool name -> `true`/`false` or `{ allowed_decisions = [...] }`."""
    if not isinstance(table, dict):
        return {}
    gates: dict[str, ApprovalGate] = {}
    allowed = ", ".join(DECISIONS)
    for tool, value in table.items():
        key = f"[interrupt_on].{tool}"
        if isinstance(value, bool):
            if value:
                gates[tool] = ApprovalGate(DECISIONS)
            continue
        if not isinstance(value, dict):
            problems.append(
                wrong_type(
                    file,
                    key,
                    "true, false or a table",
                    value,
                    f'{tool} = {{ allowed_decisions = ["approve", "reject"] }}',
                )
            )
            continue
        for extra in sorted(set(value) - {"allowed_decisions"}):
            problems.append(
                rule("unknown-key").problem(file, f"{key}.{extra}", allowed="allowed_decisions")
            )
        decisions = value.get("allowed_decisions")
        where = f"{key}.allowed_decisions"
        if decisions is None:
            example = 'allowed_decisions = ["approve", "edit", "reject"]'
            problems.append(rule("required").problem(file, where, example=example))
            continue
        if not isinstance(decisions, list) or not all(isinstance(d, str) for d in decisions):
            problems.append(
                wrong_type(
                    file,
                    where,
                    "a list of strings",
                    decisions,
                    'allowed_decisions = ["approve", "edit", "reject"]',
                )
            )
            continue
        if not decisions:
            problems.append(rule("empty").problem(file, where, fix=f"list some of: {allowed}"))
        for decision in decisions:
            if decision not in DECISIONS:
                problems.append(
                    rule("value-not-allowed").problem(file, where, value=decision, allowed=allowed)
                )
        if decisions and set(decisions) <= set(DECISIONS):
            gates[tool] = ApprovalGate(tuple(d for d in DECISIONS if d in decisions))
    return gates


def _instructions(
    root: Path, path: Path, problems: list[Problem], limits: RevisionLimits
) -> str | None:
    if not path.is_file():
        file = relative(root, path)
        problems.append(rule("instructions-missing").problem(file))
        return None
    return read_text(root, path, problems, limits)


def _user_template(root: Path, problems: list[Problem], limits: RevisionLimits) -> str | None:
    folder = root / USER_DIR
    if not folder.is_dir():
        return None
    template = folder / INSTRUCTIONS_FILE
    if not template.is_file():
        return ""
    return read_text(root, template, problems, limits) or ""


def _mcp(
    root: Path,
    folder: Path,
    env: Mapping[str, str],
    problems: list[Problem],
    limits: RevisionLimits,
) -> tuple[McpServer, ...]:
    path = folder / MCP_FILE
    return load_mcp(root, path, env, problems, limits) if path.is_file() else ()


def _subagents(
    root: Path, env: Mapping[str, str], problems: list[Problem], limits: RevisionLimits
) -> tuple[Subagent, ...]:
    folder = root / SUBAGENTS_DIR
    if not folder.is_dir():
        return ()
    subagents: list[Subagent] = []
    seen: dict[str, str] = {}
    for entry in sorted(folder.iterdir()):
        if is_hidden(entry.name) or not entry.is_dir():
            continue
        sub = _subagent(root, entry, env, problems, limits)
        if sub is None:
            continue
        if sub.name == GENERAL_PURPOSE:
            problems.append(
                rule("name-reserved").problem(
                    f"{sub.path}/{CONFIG_FILE}", "[agent].name", value=sub.name
                )
            )
            continue
        if sub.name in seen:
            problems.append(
                rule("subagent-name-duplicate").problem(
                    f"{sub.path}/{CONFIG_FILE}", "[agent].name", name=sub.name, other=seen[sub.name]
                )
            )
            continue
        seen[sub.name] = sub.path
        subagents.append(sub)
    return tuple(subagents)


def _subagent(
    root: Path,
    folder: Path,
    env: Mapping[str, str],
    problems: list[Problem],
    limits: RevisionLimits,
) -> Subagent | None:
    where = relative(root, folder)
    config = f"{where}/{CONFIG_FILE}"
    before = len(problems)
    for required in (CONFIG_FILE, INSTRUCTIONS_FILE):
        if not (folder / required).is_file():
            file = f"{where}/{required}"
            problems.append(rule("subagent-file-missing").problem(file))
    if (folder / SUBAGENTS_DIR).exists():
        nested = f"{where}/{SUBAGENTS_DIR}"
        problems.append(rule("subagent-nested").problem(nested))
    data = (
        read_toml(root, folder / CONFIG_FILE, problems, limits)
        if (folder / CONFIG_FILE).is_file()
        else None
    )
    agent: dict[str, str] | None = None
    if data is not None:
        sections = check_schema(config, data, SUBAGENT_SCHEMA, problems)
        agent = _agent_section(config, data, sections, problems)
    name = _name(config, data, agent, problems)
    description = (agent or {}).get("description")
    if agent is not None and description is None and not _declared(data, "description"):
        example = 'description = "what it does, so the main agent knows when to delegate"'
        problems.append(rule("required").problem(config, "[agent].description", example=example))
    elif description is not None and not description.strip():
        fix = "say what the subagent does, so the main agent knows when to delegate to it"
        problems.append(rule("empty").problem(config, "[agent].description", fix=fix))
    model = (agent or {}).get("model")
    if model is not None:
        _check_model(config, model, problems)
    instructions = (
        read_text(root, folder / INSTRUCTIONS_FILE, problems, limits)
        if (folder / INSTRUCTIONS_FILE).is_file()
        else None
    )
    skills: tuple[Skill, ...] = load_skills(root, folder / SKILLS_DIR, problems, limits)
    mcp_servers = _mcp(root, folder, env, problems, limits)
    if len(problems) > before:
        return None
    files = [config, f"{where}/{INSTRUCTIONS_FILE}"]
    files += [f for skill in skills for f in skill.files]
    if (folder / MCP_FILE).is_file():
        files.append(f"{where}/{MCP_FILE}")
    return Subagent(
        name=name,
        description=cast(str, description).strip(),
        model=model,
        path=where,
        instructions=cast(str, instructions),
        skills=skills,
        mcp_servers=mcp_servers,
        files=tuple(files),
    )


def _check_no_secrets(
    contents: dict[str, bytes], dotenv: Mapping[str, str], problems: list[Problem]
) -> None:
    """Refuse to bundle a file that holds a secret value from .env, as written or in a
    common disguise (`secret_scan`)."""
    problems += [
        rule("secret-in-file").problem(
            leak.file,
            f"line {leak.line}",
            name=leak.name,
            how=f" ({leak.how})" if leak.how else "",
        )
        for leak in find_leaks(contents, dotenv)
    ]
