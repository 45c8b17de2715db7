"""The project's environment: `.env` in the project root, overlaid by the real environment."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from dotenv.parser import parse_stream

from agentctl.errors import Problem
from agentctl.project.rules import rule

ENV_FILE = ".env"


def read_env_file(root: Path) -> tuple[dict[str, str], list[Problem]]:
    """Parse `root/.env`. Returns its values and a problem per line that cannot be parsed."""
    path = root / ENV_FILE
    if not path.is_file():
        return {}, []
    values: dict[str, str] = {}
    problems: list[Problem] = []
    with path.open(encoding="utf-8", errors="replace") as stream:
        for binding in parse_stream(stream):
            if binding.error:
                problems.append(rule("env-syntax").problem(ENV_FILE, line=binding.original.line))
            elif binding.key is not None and binding.value is not None:
                values[binding.key] = binding.value
    return values, problems


def is_set(env: Mapping[str, str], name: str) -> bool:
    """An empty value counts as unset: a template line `KEY=` is not a key."""
    return bool(env.get(name, "").strip())
