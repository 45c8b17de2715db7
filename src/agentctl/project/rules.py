"""The rule table: every problem the project validator can report.

Each rule has a stable id, a message template (what is wrong) and a fix template (how to
fix it). `docs/errors.md` lists them all and `tests/corpus/<rule id>/` holds one broken
project per rule; a test keeps the three in step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentctl.errors import Problem
from agentctl.serde import invalid_text

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def valid_name(name: str) -> bool:
    """Agent and subagent names: used in URLs, store namespaces and the `task` tool."""
    return _NAME.fullmatch(name) is not None


@dataclass(frozen=True)
class Rule:
    id: str
    message: str
    fix: str

    def problem(self, file: str, key: str = "", /, **fields: object) -> Problem:
        """A problem at `file` and `key`; templates may name `{file}` and any of `fields`."""
        fields = {"file": file, **fields}
        return Problem(
            file=file,
            key=key,
            message=self.message.format(**fields),
            fix=self.fix.format(**fields),
            rule=self.id,
        )


_RULES = [
    # Files of the project.
    Rule("config-missing", "not found", "run `agentctl init` here, or pass --config PATH"),
    Rule("file-not-utf8", "is not UTF-8 text", "save the file as UTF-8"),
    Rule(
        "file-unreadable",
        "cannot be read: {error}",
        "check the file's permissions, or remove it",
    ),
    Rule(
        "unsafe-link",
        "{why}, which is never bundled",
        "replace the link with a copy of the file it should hold",
    ),
    Rule(
        "revision-too-large",
        "{why} (limit {limit})",
        "{remedy}, or raise {variable} (where you run agentctl, and on the server)",
    ),
    Rule(
        "instructions-missing",
        "is missing",
        "create {file} with the agent's instructions (its system prompt)",
    ),
    # agent.toml structure and types.
    Rule("toml-syntax", "is not valid TOML: {error}", "fix the syntax at the place named"),
    Rule("unknown-section", "unknown section", "use only these sections: {allowed}"),
    Rule("unknown-key", "unknown key", "use only these keys here: {allowed}"),
    Rule("wrong-type", "must be {expected}, not {actual}", "write it as {example}"),
    Rule("value-not-allowed", '"{value}" is not allowed', "use one of: {allowed}"),
    Rule("section-missing", "section is missing", "add it, for example:\n{example}"),
    Rule("required", "is required", "add {example}"),
    Rule("empty", "must not be empty", "{fix}"),
    Rule(
        "text-invalid",
        "holds {what}, which no database can store",
        "remove it (write the text without it)",
    ),
    Rule(
        "name-invalid",
        '"{value}" is not a valid name',
        "use 1 to 64 letters, digits, '-' or '_', starting with a letter or digit",
    ),
    Rule(
        "budget-invalid",
        "must be {expected}, not {actual}",
        "write it as {example} ({meaning}), or remove the key for no limit",
    ),
    # Models.
    Rule(
        "model-format",
        '"{value}" is not in provider:model form',
        'write it as "{example}"',
    ),
    Rule(
        "model-provider-unknown",
        'unknown model provider "{provider}"',
        "use one of: {allowed}",
    ),
    Rule(
        "interrupt-on-unknown-tool",
        '"{value}" is not a tool of this agent',
        "{hint}gate one of its tools instead: {allowed} (or an MCP server's, from mcp.json)",
    ),
    # Subagents.
    Rule(
        "subagent-file-missing",
        "is missing",
        "every subagent folder needs agent.toml and AGENTS.md; add {file} or remove the folder",
    ),
    Rule(
        "subagent-name-duplicate",
        '"{name}" is also the name of {other}',
        "give every subagent a unique [agent].name",
    ),
    Rule(
        "name-reserved",
        '"{value}" is the name of the built-in subagent',
        "choose another name",
    ),
    Rule(
        "subagent-nested",
        "subagents cannot have subagents",
        "move {file} to the project's subagents/ folder",
    ),
    # mcp.json.
    Rule("json-syntax", "is not valid JSON: {error}", "fix the syntax at the place named"),
    Rule(
        "mcp-shape",
        "must be an object with a server map",
        'write {{"mcpServers": {{"name": {{"url": "https://…/mcp", "transport": "http"}}}}}}',
    ),
    Rule(
        "mcp-stdio",
        "{why}, which a deployed agent cannot run",
        'serve it over HTTP and set "url" with "transport": "http" (or "sse")',
    ),
    Rule(
        "mcp-transport",
        'transport "{value}" is not supported',
        'use "http" (streamable HTTP) or "sse"',
    ),
    Rule("mcp-url", "{why}", 'set "url" to an http:// or https:// address of the server'),
    Rule(
        "mcp-agent",
        "{why}",
        'set "agent" to the [agent].name of another agent deployed on the same platform',
    ),
    Rule(
        "env-unset",
        "uses ${{{name}}}, which is not set",
        "set {name} in the project's .env or in the environment",
    ),
    Rule(
        "mcp-literal-secret",
        "holds a literal credential, which would be bundled into the revision",
        'write it as "${{NAME}}" (e.g. "Bearer ${{NAME}}") and set NAME in .env',
    ),
    Rule(
        "mcp-oauth-agent",
        '"oauth" cannot go with "agent": an agent of the platform is called as the run\'s '
        "user already",
        'remove "oauth", or remove "agent" to call the server at its "url" with each user\'s '
        "own account",
    ),
    Rule(
        "mcp-oauth-header",
        'conflicts with "oauth": each user\'s own token is sent as the Authorization header',
        'remove the header (the server is user-owned), or remove "oauth" (every user then '
        "shares the header's credential)",
    ),
    Rule(
        "mcp-oauth-client",
        'is set without "client_id"',
        'add "client_id" (the client this secret belongs to), or remove "client_secret" to '
        "let the agent register its own client with the server",
    ),
    Rule(
        "mcp-oauth-secret",
        "is not a ${{VAR}} reference: a secret written in mcp.json would be bundled into the "
        "revision",
        'write it as "${{NAME}}" and set NAME in .env',
    ),
    Rule(
        "mcp-oauth-scopes",
        "{why}",
        'list the scopes the server asks for, one word each: "scopes": ["notes.read", '
        '"notes.write"]',
    ),
    Rule(
        "secret-in-file",
        "contains the value of {name} from .env{how}",
        "remove it from the file (and rotate the key if the file was shared); the agent "
        "receives secrets through the environment only",
    ),
    # Skills.
    Rule(
        "skill-outside-folder",
        "is not inside a skill folder",
        "move it into skills/<skill-name>/ next to that skill's SKILL.md",
    ),
    Rule(
        "skill-md-missing",
        "has no SKILL.md",
        "add {file}/SKILL.md with frontmatter `name: {name}` and a `description`",
    ),
    Rule(
        "skill-frontmatter",
        "{why}",
        "start the file with:\n---\nname: {name}\n"
        "description: what the skill does and when to use it\n---",
    ),
    Rule(
        "skill-name-mismatch",
        '"{value}" differs from its folder name "{name}"',
        "set `name: {name}` or rename the folder to {value}",
    ),
    # .env.
    Rule("env-syntax", "line {line} cannot be parsed", "write it as NAME=value"),
]

RULES: dict[str, Rule] = {rule.id: rule for rule in _RULES}


def rule(rule_id: str) -> Rule:
    return RULES[rule_id]


def kind_of(value: object) -> str:
    """How an error message names the type of a parsed TOML or JSON value."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    names = {str: "a string", list: "a list", dict: "a table/object", type(None): "null"}
    return names.get(type(value), f"a {type(value).__name__}")


def text_problems(file: str, value: Any, key: str = "", *, toml: bool = False) -> list[Problem]:
    """A `text-invalid` problem for each text of a parsed file (keys too) holding NUL or a
    lone surrogate (which JSON's `\\ud800` can write): PostgreSQL stores neither, so a
    revision holding one could not be deployed. `toml`: top-level tables are `[name]`."""
    found: list[Problem] = []
    if isinstance(value, str):
        what = invalid_text(value)
        if what:
            found.append(RULES["text-invalid"].problem(file, key, what=what))
    elif isinstance(value, dict):
        for name, item in value.items():
            shown = repr(name) if invalid_text(name) else name
            if key:
                where = f"{key}.{shown}"
            else:
                where = f"[{shown}]" if toml and isinstance(item, dict) else shown
            found += text_problems(file, name, where)
            found += text_problems(file, item, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += text_problems(file, item, f"{key}[{index}]")
    return found


def wrong_type(file: str, key: str, expected: str, value: object, example: str) -> Problem:
    """The `wrong-type` problem for `value`, which should have been `expected`."""
    return RULES["wrong-type"].problem(
        file, key, expected=expected, actual=kind_of(value), example=example
    )
