"""Walking project folders the way the bundler sees them: hidden entries skipped, sorted."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from agentctl.errors import Problem
from agentctl.project.rules import rule


def is_hidden(name: str) -> bool:
    return name.startswith(".")


def relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def walk_files(root: Path, folder: Path, problems: list[Problem]) -> Iterator[Path]:
    """Every non-hidden file under `folder`, sorted; links leaving the project are reported."""
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not is_hidden(d))
        here = Path(dirpath)
        for sub in list(dirnames):
            if (here / sub).is_symlink():
                dirnames.remove(sub)
                if _escapes(root, here / sub, problems):
                    continue
                yield from walk_files(root, here / sub, problems)
        for name in sorted(filenames):
            path = here / name
            if is_hidden(name) or (path.is_symlink() and _escapes(root, path, problems)):
                continue
            if path.is_file():
                yield path


def _escapes(root: Path, link: Path, problems: list[Problem]) -> bool:
    target = link.resolve()
    if target.is_relative_to(root.resolve()):
        return False
    problems.append(rule("symlink-outside").problem(relative(root, link)))
    return True


def read_text(root: Path, path: Path, problems: list[Problem]) -> str | None:
    """The file as text, or None (with a problem) when it is not UTF-8."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        problems.append(rule("file-not-utf8").problem(relative(root, path)))
        return None
