"""`agentctl dev` as a user runs it: a subprocess whose output is collected line by line."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

READY_TIMEOUT = 60.0


class DevProcess:
    """`agentctl dev ARGS` in a subprocess; its output is collected line by line."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentctl", "dev", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=cwd,
        )
        self.lines: dict[str, list[str]] = {"out": [], "err": []}
        self._changed = threading.Condition()
        assert self.proc.stdout is not None
        assert self.proc.stderr is not None
        self._readers = [
            threading.Thread(target=self._read, args=(stream, name), daemon=True)
            for name, stream in (("out", self.proc.stdout), ("err", self.proc.stderr))
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: Any, name: str) -> None:
        for line in stream:
            with self._changed:
                self.lines[name].append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def out(self) -> str:
        return "\n".join(self.lines["out"])

    @property
    def err(self) -> str:
        return "\n".join(self.lines["err"])

    def wait_for(
        self, pattern: str, stream: str = "out", *, after: int = 0, timeout: float = 30.0
    ) -> re.Match[str]:
        """The first line of `stream` (from line number `after`) matching `pattern`."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines[stream][after:]:
                    if match := regex.search(line):
                        return match
                if self.proc.poll() is not None and not any(r.is_alive() for r in self._readers):
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._changed.wait(min(remaining, 0.5))
        raise AssertionError(
            f"no line matching {pattern!r} on std{stream}\n"
            f"--- stdout\n{self.out}\n--- stderr\n{self.err}"
        )

    def ready(self) -> str:
        """Wait until it serves (the whole ready message is out); its URL."""
        self.wait_for(r"^Watching .* Press Ctrl-C to stop\.$", timeout=READY_TIMEOUT)
        return self.wait_for(r"^  API   (http://\S+)$").group(1)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for reader in self._readers:
            reader.join(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


StartDev = Callable[..., DevProcess]
