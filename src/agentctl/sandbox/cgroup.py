"""A memory limit on all the processes of a sandbox, with cgroup v2, where the kernel lets
this process make cgroups.

    <base>/agentctl-service/    this process, moved out of <base> (`auto` only: a cgroup
                                with processes cannot give its children controllers)
    <base>/sandbox-<name>/      one per sandbox while it runs commands: memory.max,
                                memory.swap.max = 0, memory.oom.group = 1

`auto` takes the process's own cgroup as <base>, which works when the memory controller is
delegated to it (a systemd unit with `Delegate=yes`, a container with a cgroup namespace of
its own and `/sys/fs/cgroup` writable). A prepared <base> (a path) is used as it is. Memory
of the files a sandbox writes to its in-memory `/tmp` is charged to its cgroup too.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from agentctl.errors import CgroupError

log = logging.getLogger("agentctl.sandbox")

SERVICE_LEAF = "agentctl-service"
# Joins the cgroup (`$0`, its cgroup.procs) before running the rest: no process escapes.
_JOIN = 'echo $$ > "$0" && exec "$@"'


@dataclass(frozen=True)
class Cgroups:
    base: Path  # a cgroup v2 folder with `memory` in its cgroup.subtree_control

    def folder(self, name: str) -> Path:
        leaf = f"sandbox-{name}" if len(name) <= 200 else hashlib.sha256(name.encode()).hexdigest()
        return self.base / leaf

    def prepare(self, name: str, memory_bytes: int) -> Path:
        """The cgroup of sandbox `name`, made if missing, limited to `memory_bytes`."""
        folder = self.folder(name)
        folder.mkdir(exist_ok=True)
        (folder / "memory.max").write_text(str(memory_bytes))
        for setting, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
            if (folder / setting).exists():  # no swap accounting, or an older kernel
                (folder / setting).write_text(value)
        return folder

    def join(self, folder: Path, argv: list[str]) -> list[str]:
        """`argv`, run inside the cgroup `folder` from its first instruction."""
        return ["/bin/sh", "-c", _JOIN, str(folder / "cgroup.procs"), *argv]

    def oom_kills(self, folder: Path) -> int:
        """How many times the kernel killed a process of the cgroup for its memory limit."""
        try:
            events = (folder / "memory.events").read_text().split()
        except FileNotFoundError:
            return 0
        pairs = dict(zip(events[::2], events[1::2], strict=False))
        return int(pairs.get("oom_kill", pairs.get("oom_group_kill", "0")))

    def release(self, folder: Path) -> None:
        """Remove the cgroup once no process is left in it."""
        with contextlib.suppress(OSError):  # busy (another command of it), or already gone
            folder.rmdir()


def open_cgroups(setting: str) -> Cgroups:
    """The cgroups of `AGENTCTL_SANDBOX_CGROUP` (`auto` or a path); `CgroupError` if none."""
    if setting == "off":
        raise CgroupError("AGENTCTL_SANDBOX_CGROUP is off")
    if setting != "auto":
        base = Path(setting)
        if "memory" not in _words(base / "cgroup.subtree_control"):
            raise CgroupError(
                f"AGENTCTL_SANDBOX_CGROUP: {base} is not a cgroup v2 folder with the memory "
                "controller enabled for its children (cgroup.subtree_control)"
            )
        return Cgroups(base)
    base = own_cgroup()
    if "memory" not in _words(base / "cgroup.controllers"):
        raise CgroupError(f"the cgroup v2 memory controller is not delegated to {base}")
    if "memory" not in _words(base / "cgroup.subtree_control"):
        _enable_memory(base)
    return Cgroups(base)


def own_cgroup() -> Path:
    """This process's cgroup v2 folder."""
    mount = next(
        (line.split()[1] for line in _lines("/proc/self/mounts") if line.split()[2] == "cgroup2"),
        None,
    )
    path = next((line[3:] for line in _lines("/proc/self/cgroup") if line.startswith("0::")), None)
    if mount is None or path is None:
        raise CgroupError("cgroup v2 is not mounted here")
    return Path(mount) / path.lstrip("/")


def _enable_memory(base: Path) -> None:
    """Move this process into a leaf of `base`, so that `base` can give its children the
    memory controller; undone if that fails."""
    leaf = base / SERVICE_LEAF
    pid = str(os.getpid())
    try:
        leaf.mkdir(exist_ok=True)
        (leaf / "cgroup.procs").write_text(pid)
    except OSError as exc:
        raise CgroupError(f"cannot make cgroups in {base}: {exc.strerror}") from None
    try:
        (base / "cgroup.subtree_control").write_text("+memory")
    except OSError as exc:  # other processes share `base`
        try:
            (base / "cgroup.procs").write_text(pid)
            leaf.rmdir()
        except OSError:
            log.warning("could not move back from %s", leaf)
        raise CgroupError(
            f"cannot enable the memory controller in {base}: {exc.strerror}"
        ) from None


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []
