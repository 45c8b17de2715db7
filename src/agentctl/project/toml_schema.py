"""Checking a parsed agent.toml against its allowed sections and keys."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from agentctl.bundle.limits import RevisionLimits
from agentctl.errors import Problem
from agentctl.project.files import read_text, relative
from agentctl.project.rules import rule, text_problems, wrong_type

# section -> key -> an example value shown in errors (every value is a string)
Schema = dict[str, dict[str, str]]

MAIN_SCHEMA: Schema = {
    "agent": {
        "name": '"my-agent"',
        "model": '"openai:gpt-4.1"',
        "description": '"Answers questions about our product documentation"',
    },
    "sandbox": {
        "provider": '"none"',
        "template": '"agent-deploy"',
        "image": '"python:3"',
        "scope": '"thread"',
    },
    "auth": {
        "provider": '"idp_a"',
        "issuer": '"https://login.example.com"',
        "audience": '"my-agent"',
        "client_id": '"agentctl-console"',
    },
    # Keys are tool names; values are checked by the loader (see `approval_gates`).
    "interrupt_on": {},
    # Numbers, checked by the loader (see `budgets`).
    "budgets": {
        "user_tokens_per_day": "200000",
        "user_cost_per_day": "5.0",
        "user_runs_per_minute": "10",
        "agent_tokens_per_day": "5000000",
        "agent_cost_per_day": "100.0",
        "agent_runs_per_minute": "120",
    },
}
# Sections whose keys are the user's own names, not ours.
OPEN_SECTIONS = ("interrupt_on",)
# Sections whose values are not strings: their keys are checked here, their values by the
# loader.
NUMBER_SECTIONS = ("budgets",)
SUBAGENT_SCHEMA: Schema = {
    "agent": {
        "name": '"researcher"',
        "description": '"Researches a topic in depth and reports back"',
        "model": '"openai:gpt-4.1"',
    },
}


def read_toml(
    root: Path, path: Path, problems: list[Problem], limits: RevisionLimits
) -> dict[str, Any] | None:
    text = read_text(root, path, problems, limits)
    if text is None:
        return None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        problems.append(rule("toml-syntax").problem(relative(root, path), error=str(exc)))
        return None
    except RecursionError:
        error = "nested too deeply"
        problems.append(rule("toml-syntax").problem(relative(root, path), error=error))
        return None
    problems += text_problems(relative(root, path), data, toml=True)
    return data


def check_schema(
    file: str, data: dict[str, Any], schema: Schema, problems: list[Problem]
) -> dict[str, dict[str, str]]:
    """The string-valued keys of the known sections; everything else becomes a problem."""
    sections = ", ".join(f"[{name}]" for name in schema)
    valid: dict[str, dict[str, str]] = {}
    for section, table in data.items():
        if section not in schema:
            problems.append(rule("unknown-section").problem(file, f"[{section}]", allowed=sections))
            continue
        keys = schema[section]
        if not isinstance(table, dict):
            problems.append(
                wrong_type(
                    file,
                    f"[{section}]",
                    "a table",
                    table,
                    f"[{section}] on a line of its own, then its keys",
                )
            )
            continue
        valid[section] = {}
        if section in OPEN_SECTIONS:
            continue
        for key, value in table.items():
            where = f"[{section}].{key}"
            if key not in keys:
                problems.append(rule("unknown-key").problem(file, where, allowed=", ".join(keys)))
            elif section in NUMBER_SECTIONS:
                continue
            elif not isinstance(value, str):
                problems.append(wrong_type(file, where, "a string", value, f"{key} = {keys[key]}"))
            else:
                valid[section][key] = value
    return valid
