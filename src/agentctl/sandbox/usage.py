"""What a sandbox uses, measured from outside: the memory of a command's processes (where no
cgroup limits it) and the disk space of a workspace. Blocking: call in a worker thread."""

from __future__ import annotations

import os
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
SCRATCH = ("tmp", "dev/shm")  # the in-memory folders of a command


def descendants(pid: int) -> list[int]:
    """The processes started, directly or not, by `pid` (not `pid` itself)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # ended meanwhile
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        found.append(child := todo.pop())
        todo += children.get(child, [])
    return found


def command_memory(pid: int) -> int:
    """Bytes of memory held by the command whose bubblewrap is `pid`: the private memory of
    its processes plus the files in its in-memory /tmp and /dev/shm."""
    processes = descendants(pid)
    used = 0
    for child in processes:
        try:
            with open(f"/proc/{child}/statm", "rb") as statm:
                fields = statm.read().split()
        except OSError:
            continue
        used += max(0, int(fields[1]) - int(fields[2])) * PAGE  # resident, not file-backed
    for child in processes:  # any process inside sees the command's own /tmp
        try:
            scratch = [os.statvfs(f"/proc/{child}/root/{folder}") for folder in SCRATCH]
        except OSError:
            continue
        return used + sum((s.f_blocks - s.f_bfree) * s.f_frsize for s in scratch)
    return used


def disk_used(folder: Path) -> int:
    """Bytes of disk the files under `folder` take (what `du` counts)."""
    used = 0
    todo = [str(folder)]
    seen: set[tuple[int, int]] = set()
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:  # unreadable, or removed meanwhile
            continue
        for entry in entries:
            try:
                stat = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.st_nlink > 1:  # a hard link counts once
                if (stat.st_dev, stat.st_ino) in seen:
                    continue
                seen.add((stat.st_dev, stat.st_ino))
            used += stat.st_blocks * 512
            if entry.is_dir(follow_symlinks=False):
                todo.append(entry.path)
    return used
