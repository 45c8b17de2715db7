"""`agentctl serve` replicas as real processes on loopback, for tests and benchmarks: each
on a free port, its log kept, stoppable with SIGTERM or killed with SIGKILL."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

_LISTENING = re.compile(r"listening on (http://[\w.\-\[\]:]+:\d+)")


@dataclass
class Replica:
    process: subprocess.Popen[str]
    data_dir: Path
    url: str = ""
    log: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: the replica dies mid-whatever, as a crashed machine would."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        self._close()

    def terminate(self, timeout: float = 60) -> int:
        """SIGTERM, then wait for the graceful stop; returns the exit code."""
        if self.alive:
            self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout)
        self._close()
        return code

    def _close(self) -> None:
        """Read the log to its end and close the pipe."""
        if self.reader is not None:
            self.reader.join(10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def output(self) -> str:
        return "\n".join(self.log)


def start_replica(
    env: Mapping[str, str],
    data_dir: Path,
    *,
    command: str = "serve",
    timeout: float = 90,
    port: int = 0,
) -> Replica:
    """Start `agentctl serve` (or another server `command`, e.g. `sandbox-server`) with
    `env` added to this process's environment and wait until it listens (on `port`, else
    a free one). Raises RuntimeError with its log when it exits or does not come up."""
    data_dir.mkdir(parents=True, exist_ok=True)
    full_env = {
        **os.environ,
        "AGENTCTL_LOG_FORMAT": "json",
        **env,
        "AGENTCTL_DATA_DIR": str(data_dir),
        "AGENTCTL_LOG_LEVEL": "info",  # its "listening on" line tells the URL
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "agentctl", command, "--host", "127.0.0.1", "--port", str(port)],
        env=full_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    replica = Replica(process, data_dir)
    listening = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            replica.log.append(line.rstrip("\n"))
            if not replica.url and (found := _LISTENING.search(line)):
                replica.url = found.group(1)
                listening.set()

    replica.reader = threading.Thread(target=read, daemon=True)
    replica.reader.start()
    deadline = time.monotonic() + timeout
    while not listening.wait(0.05):
        if process.poll() is not None or time.monotonic() > deadline:
            replica.kill()
            raise RuntimeError(f"agentctl {command} did not start:\n{replica.output()}")
    return replica
