"""Skills: each folder under `skills/` holds a SKILL.md with `name` and `description`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from agentctl.bundle.limits import RevisionLimits
from agentctl.errors import Problem
from agentctl.project.files import is_hidden, read_text, relative, walk_files
from agentctl.project.model import Skill
from agentctl.project.rules import rule

SKILL_FILE = "SKILL.md"


_FRONTMATTER = re.compile(r"^---\s*\n(.*?)\n---\s*\n", re.DOTALL)


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """`(frontmatter, body)`; frontmatter is None unless the text opens with a `---` block
    closed by a `---` line (the form deepagents reads)."""
    match = _FRONTMATTER.match(text)
    if match is None:
        return None, text
    return match.group(1), text[match.end() :]


def load_skills(
    root: Path, folder: Path, problems: list[Problem], limits: RevisionLimits
) -> tuple[Skill, ...]:
    """Every skill under `folder` (a `skills/` directory), in name order."""
    if not folder.is_dir():
        return ()
    skills: list[Skill] = []
    for entry in sorted(folder.iterdir()):
        if is_hidden(entry.name):
            continue
        if not entry.is_dir():
            problems.append(rule("skill-outside-folder").problem(relative(root, entry)))
            continue
        skill = _load_skill(root, entry, problems, limits)
        if skill:
            skills.append(skill)
    return tuple(skills)


def _load_skill(
    root: Path, folder: Path, problems: list[Problem], limits: RevisionLimits
) -> Skill | None:
    where = relative(root, folder)
    skill_md = folder / SKILL_FILE
    files = tuple(relative(root, p) for p in walk_files(root, folder))
    if not skill_md.is_file():
        problems.append(rule("skill-md-missing").problem(where, name=folder.name))
        return None
    text = read_text(root, skill_md, problems, limits)
    if text is None:
        return None
    meta = _frontmatter(f"{where}/{SKILL_FILE}", text, folder.name, problems)
    if meta is None:
        return None
    return Skill(
        name=folder.name,
        description=str(meta["description"]).strip(),
        path=where,
        files=files,
    )


def _frontmatter(
    file: str, text: str, folder_name: str, problems: list[Problem]
) -> dict[str, Any] | None:
    """The validated frontmatter, or None after reporting what is wrong with it."""
    bad = rule("skill-frontmatter")
    raw, _ = split_frontmatter(text)
    if raw is None:
        problems.append(bad.problem(file, why="has no frontmatter", name=folder_name))
        return None
    try:
        meta = yaml.safe_load(raw)
    except (yaml.YAMLError, RecursionError) as exc:
        why = "frontmatter is not valid YAML: " + str(exc).replace("\n", " ")
        problems.append(bad.problem(file, why=why, name=folder_name))
        return None
    if not isinstance(meta, dict):
        why = "frontmatter must be a YAML mapping"
        problems.append(bad.problem(file, why=why, name=folder_name))
        return None
    ok = True
    name = meta.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append(bad.problem(file, "name", why="is missing or empty", name=folder_name))
        ok = False
    elif name.strip() != folder_name:
        problems.append(
            rule("skill-name-mismatch").problem(file, "name", value=name.strip(), name=folder_name)
        )
        ok = False
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        why = "is missing or empty"
        problems.append(bad.problem(file, "description", why=why, name=folder_name))
        ok = False
    return meta if ok else None
