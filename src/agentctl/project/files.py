"""Walking and reading project files the way the bundler sees them. No file is read before
its size on disk is checked against the revision's limits (`bundle/limits.py`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from agentctl.bundle.limits import Excess, RevisionLimits
from agentctl.errors import Problem
from agentctl.project.rules import rule


def is_hidden(name: str) -> bool:
    return name.startswith(".")


def relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def walk_files(root: Path, folder: Path) -> Iterator[Path]:
    """Every non-hidden file under `folder`, sorted. Linked folders are followed once each;
    where links lead is checked for every bundled file by `check_bundled`."""
    seen: set[Path] = set()
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        here = Path(dirpath)
        real = here.resolve()
        if real in seen:
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(d for d in dirnames if not is_hidden(d))
        for name in sorted(filenames):
            if not is_hidden(name) and (here / name).is_file():
                yield here / name


def check_bundled(
    root: Path, files: list[str], problems: list[Problem], limits: RevisionLimits
) -> dict[str, bytes]:
    """Read every file a revision will hold. A file that is a link out of the project or to a
    hidden file (such as `.env`), or that cannot be read, is reported instead; and when the
    files are past `limits` (by their sizes on disk), what is past them, and none is read."""
    real_root = root.resolve()
    oversized = {p.file for p in problems if p.rule == TOO_LARGE}  # read_text's already
    sizes: dict[str, int] = {}
    for file in files:
        path = root / file
        target = path.resolve()
        if not target.is_relative_to(real_root):
            why = "is a link to a place outside the project"
            problems.append(rule("unsafe-link").problem(file, why=why))
            continue
        if any(is_hidden(part) for part in target.relative_to(real_root).parts):
            why = f"is a link to the hidden file {target.relative_to(real_root).as_posix()}"
            problems.append(rule("unsafe-link").problem(file, why=why))
            continue
        if file in oversized:
            continue
        try:
            sizes[file] = path.stat().st_size
        except OSError as exc:
            problems.append(rule("file-unreadable").problem(file, error=exc.strerror or exc))
    excess = limits.excess(sizes)
    problems += [too_large(found) for found in excess]
    contents: dict[str, bytes] = {}
    for file in sizes if not excess else ():
        try:
            contents[file] = (root / file).read_bytes()
        except OSError as exc:
            problems.append(rule("file-unreadable").problem(file, error=exc.strerror or exc))
    return contents


TOO_LARGE = "revision-too-large"


def too_large(excess: Excess) -> Problem:
    return rule(TOO_LARGE).problem(
        excess.file, why=excess.why, limit=excess.limit, remedy=excess.remedy,
        variable=excess.variable,
    )  # fmt: skip


def read_text(
    root: Path, path: Path, problems: list[Problem], limits: RevisionLimits
) -> str | None:
    """The file as text (a UTF-8 BOM is dropped), or None with a problem (a file larger
    than a whole revision is not read)."""
    try:
        excess = limits.excess({relative(root, path): path.stat().st_size})
        if excess:
            problems += [too_large(found) for found in excess]
            return None
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        problems.append(rule("file-not-utf8").problem(relative(root, path)))
    except OSError as exc:
        file = relative(root, path)
        problems.append(rule("file-unreadable").problem(file, error=exc.strerror or exc))
    return None
