"""How large a revision may be: its files' total size and their number.

A project, or a crafted archive, must not make `agentctl deploy`, `agentctl dev` or a
replica read, write or hold gigabytes (a sparse file of 1 GB takes no disk and compresses
to a few KB). So sizes are checked before any data is read: a project's files by their size
on disk (`os.stat`; a sparse file counts at its apparent size), an uploaded archive's
entries by the sizes their headers declare, one entry at a time (`ArchiveTally`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import PurePosixPath
from typing import Any

from agentctl.errors import RevisionTooLarge
from agentctl.settings import BY_NAME, parse

MIB = 1024 * 1024


def mib(size: int) -> str:
    return f"{size / MIB:.1f} MiB"


@dataclass(frozen=True)
class RevisionLimits:
    """Field `x` is the setting `AGENTCTL_X`."""

    max_revision_mb: int = 256
    max_revision_files: int = 5000

    @classmethod
    def of(cls, settings: Any) -> RevisionLimits:
        """The limits of a `Settings` (whose fields have the same names)."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RevisionLimits:
        """The limits the environment sets (what `deploy` and `dev` bundle with)."""
        return cls(**{f.name: parse(BY_NAME[_variable(f.name)], env.get(_variable(f.name)))
                      for f in fields(cls)})  # fmt: skip

    @property
    def max_bytes(self) -> int:
        return self.max_revision_mb * MIB

    def excess(self, sizes: Mapping[str, int]) -> list[Excess]:
        """What in a project's files (`sizes`: path → bytes) goes past the limits: each
        file larger than a whole revision; or, when the files are too large together, the
        largest; or, when they are too many, the folder holding most of them."""
        found = [_too_large(self, path, f"is {mib(size)}, more than a whole revision may hold")
                 for path, size in sorted(sizes.items()) if size > self.max_bytes]  # fmt: skip
        total = sum(sizes.values())
        if not found and total > self.max_bytes:
            largest = max(sorted(sizes), key=sizes.__getitem__)
            why = (f"is {mib(sizes[largest])} of the {mib(total)} the project's files hold "
                   "together, more than a revision may hold")  # fmt: skip
            found.append(_too_large(self, largest, why))
        if len(sizes) > self.max_revision_files:
            folders = Counter(str(PurePosixPath(path).parent) for path in sizes)
            folder, count = max(sorted(folders.items()), key=lambda item: item[1])
            why = (f"holds {count} of the project's {len(sizes)} files, more than a revision "
                   "may hold")  # fmt: skip
            found.append(_too_many(self, "." if folder == "." else folder + "/", why))
        return found


def _too_large(limits: RevisionLimits, file: str, why: str) -> Excess:
    return Excess(file, why, f"{limits.max_revision_mb} MiB", "max_revision_mb",
                  "make it smaller or leave it out of the project")  # fmt: skip


def _too_many(limits: RevisionLimits, folder: str, why: str) -> Excess:
    return Excess(folder, why, f"{limits.max_revision_files} files", "max_revision_files",
                  "leave some of its files out of the project")  # fmt: skip


@dataclass(frozen=True)
class Excess:
    """One thing past a revision's limits, and how to get under them."""

    file: str  # the file or folder to blame
    why: str  # what is wrong with it, e.g. "is 1024.0 MiB, more than ..."
    limit: str  # e.g. "256 MiB"
    field: str  # the `RevisionLimits` field setting the limit
    remedy: str

    @property
    def variable(self) -> str:
        return _variable(self.field)

    def error(self) -> RevisionTooLarge:
        """The error of a replica refusing an archive."""
        return RevisionTooLarge(
            f"revision archive: {self.file} {self.why} (limit {self.limit}, set by "
            f"{self.variable} on the server) — {self.remedy}, or raise the limit"
        )


class ArchiveTally:
    """An archive's entries counted one at a time, from their headers, before their data
    is read: `add` raises `RevisionTooLarge` at the first entry past the limits."""

    def __init__(self, limits: RevisionLimits) -> None:
        self.limits = limits
        self.files = 0
        self.bytes = 0

    def add(self, name: str, size: int, *, counted: bool = True) -> None:
        """One entry; the manifest is not `counted` among the project's files, but no
        entry may be larger than a whole revision."""
        limits = self.limits
        if size > limits.max_bytes:
            why = f"is {mib(size)}, more than a whole revision may hold"
            raise _too_large(limits, name, why).error()
        if not counted:
            return
        self.files += 1
        self.bytes += size
        if self.bytes > limits.max_bytes:
            why = "takes the revision's files past the size a revision may hold together"
            raise _too_large(limits, name, why).error()
        if self.files > limits.max_revision_files:
            why = "is one file more than a revision may hold"
            raise _too_many(limits, name, why).error()


def _variable(field: str) -> str:
    return f"AGENTCTL_{field.upper()}"
