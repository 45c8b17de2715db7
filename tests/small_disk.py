"""A real disk that fills up: a small tmpfs mounted over a folder, filled to the last byte and
freed again by the test. Mounting needs root (or `sudo` without a password)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

FILLER = ".filler"


class SmallDisk:
    """A tmpfs of `size` (mount(8)'s syntax) mounted over a folder by `mount`."""

    def __init__(self, size: str = "4m") -> None:
        self.size = size
        self.folder: Path | None = None

    def mount(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        options = ["-t", "tmpfs", "-o", f"size={self.size}", "tmpfs", str(folder)]
        done = _privileged(["mount", *options])
        if done.returncode != 0:
            raise PermissionError(
                f"the full-disk tests mount a small tmpfs, which needs root or sudo without a "
                f"password: {done.stderr.strip()} — run them as root, or leave them out with "
                "-m 'not disk'"
            )
        self.folder = folder
        return folder

    def fill(self) -> None:
        """Write a file until the disk has no byte left."""
        assert self.folder is not None
        # Unbuffered: the last write takes what is left, the next one meets ENOSPC.
        with open(self.folder / FILLER, "ab", buffering=0) as filler, contextlib.suppress(OSError):
            while True:
                filler.write(b"\0" * (1 << 16))
        assert self.free_bytes() == 0

    def free(self) -> None:
        assert self.folder is not None
        (self.folder / FILLER).unlink()

    def free_bytes(self) -> int:
        assert self.folder is not None
        found = os.statvfs(self.folder)
        return found.f_bavail * found.f_frsize

    def unmount(self) -> None:
        if self.folder is not None:
            _privileged(["umount", "--lazy", str(self.folder)])
            self.folder = None


def _privileged(command: list[str]) -> subprocess.CompletedProcess[str]:
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    return subprocess.run([*prefix, *command], capture_output=True, text=True, check=False)
