"""The loopback services' commands (`python -m agentctl.testing`, `….identity`,
`….oauth_provider`), as `make demo` runs and stops them: a burst of stop signals (a script
stopping its jobs signals one twice) ends each promptly, never deadlocking it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

READY = {
    "agentctl.testing": "listening on",
    "agentctl.testing.identity": "Press Ctrl-C",
    "agentctl.testing.oauth_provider": "Press Ctrl-C",
}


@pytest.mark.parametrize("module", sorted(READY))
def test_a_burst_of_stop_signals_stops_the_command(module: str) -> None:
    ports = ["--port", "0"] + (["--mcp-port", "0"] if module.endswith("oauth_provider") else [])
    command = [sys.executable, "-m", module, *ports]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if READY[module] in line:
                break
        else:
            pytest.fail(f"{module} did not start (exit {proc.wait()})")
        try:
            # Signals for a while: one lands inside the handler of another sooner or later.
            deadline = time.monotonic() + 3
            while proc.poll() is None and time.monotonic() < deadline:
                os.kill(proc.pid, signal.SIGTERM)
            assert proc.wait(15) == 0  # stopped cleanly, the signals after the first ignored
        finally:
            proc.kill()
