"""`agentctl init`: the files of a new project, from the templates beside this module."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from string import Template

from agentctl.bundle.dependencies import (
    AUTH_PROVIDERS,
    MODEL_PROVIDERS,
    PLATFORM_API_KEY,
    SANDBOX_PROVIDERS,
    model_provider,
)
from agentctl.errors import ProjectExistsError, UserError
from agentctl.project.loader import DEFAULT_MODEL
from agentctl.project.rules import valid_name

_TEMPLATES = files("agentctl.project") / "templates"
# project path -> template path; `.env` is generated from the dependency table.
_FILES = {
    "agent.toml": "agent.toml",
    "AGENTS.md": "AGENTS.md",
    "mcp.json": "mcp.json",
    "skills/review/SKILL.md": "skills/review/SKILL.md",
}
GITIGNORE = ".gitignore"


@dataclass(frozen=True)
class Scaffold:
    root: Path
    name: str
    created: list[str]


def agent_name_for(folder: Path) -> str:
    """A valid agent name derived from a folder name (for `agentctl init` with no name)."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", folder.name).strip("-_")[:64]
    return name if valid_name(name) else "agent"


def env_template(model: str) -> str:
    """The `.env` template: every variable the model and each option may need."""
    lines = [
        "# Secrets of this agent project. Never commit this file (.gitignore excludes it).",
        "# agentctl reads it for `dev` and `deploy`; variables set in the environment win.",
        "",
        f"# Model {model}",
    ]
    lines += [f"{name}=" for name in MODEL_PROVIDERS[model_provider(model)].env]
    lines += [
        "",
        "# `agentctl deploy` and the platform sandbox: the deployment key of your agentctl server",
        f"{PLATFORM_API_KEY}=",
    ]
    for provider, needs in AUTH_PROVIDERS.items():
        lines += ["", f'# [auth] provider = "{provider}"']
        lines += [f"# {name}=" for name in needs.env]
    for provider, needs in SANDBOX_PROVIDERS.items():
        if needs.env and needs.env != (PLATFORM_API_KEY,):
            lines += ["", f'# [sandbox] provider = "{provider}"']
            lines += [f"# {name}=" for name in needs.env]
    return "\n".join(lines) + "\n"


def _check_kinds(folder: Path, contents: dict[str, str]) -> None:
    """Refuse (even with --force) where a file stands for a folder of the project or a
    folder for one of its files: init replaces files, never one kind with the other."""
    for path in (folder, *folder.parents):
        if path.exists():
            if not path.is_dir():
                raise UserError(
                    f"{path} is a file, not a folder — choose another name, or move the file"
                )
            break
    for rel in contents:
        target = folder / rel
        for parent in reversed(target.relative_to(folder).parents[:-1]):
            if (folder / parent).exists() and not (folder / parent).is_dir():
                raise UserError(f"{folder / parent} is a file where init makes a folder — move it")
        if target.is_dir():
            raise UserError(f"{target} is a folder where init writes a file — move it")


def scaffold(folder: Path, name: str | None = None, *, force: bool = False) -> Scaffold:
    """Create a project in `folder`. Without `force`, refuse to overwrite anything."""
    name = name or agent_name_for(folder.absolute())
    if not valid_name(name):
        raise UserError(
            f'"{name}" is not a valid agent name — use 1 to 64 letters, digits, '
            "'-' or '_', starting with a letter or digit"
        )
    model = DEFAULT_MODEL
    contents = {
        path: Template((_TEMPLATES / template).read_text(encoding="utf-8")).safe_substitute(
            name=name, model=model
        )
        for path, template in _FILES.items()
    }
    contents[".env"] = env_template(model)
    _check_kinds(folder, contents)
    existing = [path for path in contents if (folder / path).exists()]
    if existing and not force:
        raise ProjectExistsError(sorted(existing))
    if not (folder / GITIGNORE).exists():
        contents[GITIGNORE] = (_TEMPLATES / "dot-gitignore").read_text(encoding="utf-8")
    for path, text in contents.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (folder / ".env").chmod(0o600)
    return Scaffold(root=folder, name=name, created=sorted(contents))
