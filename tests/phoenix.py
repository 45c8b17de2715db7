"""Arize Phoenix, a real OpenTelemetry backend (OTLP/HTTP in, spans out of its REST API), for
the tests of traces.

Phoenix is a large application whose dependencies cannot share the project's venv, so it is
installed from PyPI, once, into a venv of its own under `~/.cache/agentctl-tests/`
(`$XDG_CACHE_HOME` when set): `python -m tests.phoenix` does it ahead of time
(scripts/test-deps.sh, so `make test` and CI), the tests otherwise on first use.
`Phoenix(folder)` serves it on 127.0.0.1 and ephemeral ports, its data in `folder`.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import venv
from pathlib import Path
from typing import Any, Self

import httpx

PHOENIX = "arize-phoenix==20.26.1"
INSTALL_TIMEOUT = 1800.0  # seconds: a few hundred MB of wheels
START_TIMEOUT = 120.0  # seconds: it migrates its database first (about 10 s here)


class PhoenixUnavailable(Exception):
    """Phoenix could not be installed or started; the message says why."""


def phoenix_python() -> Path:
    """The python of the venv holding Phoenix, made once and kept in the user's cache."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = cache / "agentctl-tests" / PHOENIX.replace("==", "-")
    python = folder / "bin" / "python"
    marker = folder / ".installed"
    if marker.is_file():
        return python
    venv.create(folder, with_pip=True, clear=True)
    try:
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             PHOENIX],
            capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise PhoenixUnavailable(f"installing {PHOENIX} took over {INSTALL_TIMEOUT:g} s") from None
    if done.returncode != 0:
        raise PhoenixUnavailable(f"installing {PHOENIX} failed:\n{done.stderr[-4000:]}")
    marker.touch()
    return python


class Phoenix:
    """`phoenix serve` on 127.0.0.1 (ephemeral ports, its data in `folder`), while entered."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.url = ""
        self.output: list[str] = []
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> Self:
        python = phoenix_python()
        self.folder.mkdir(parents=True, exist_ok=True)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))},
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": "0",
            "PHOENIX_GRPC_PORT": "0",
            "PHOENIX_WORKING_DIR": str(self.folder),
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("PYTHONPATH", None)
        self._process = subprocess.Popen(
            [str(python.parent / "phoenix"), "serve"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
            cwd=self.folder,
        )  # fmt: skip
        started = threading.Event()
        self._reader = threading.Thread(target=self._read, args=(started,), daemon=True)
        self._reader.start()
        if not started.wait(START_TIMEOUT) or not self.url:
            self.__exit__()
            tail = "\n".join(self.output[-40:])
            raise PhoenixUnavailable(f"phoenix serve did not start:\n{tail}")
        return self

    def _read(self, started: threading.Event) -> None:
        assert self._process is not None
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self.output.append(line.rstrip("\n"))
            # uvicorn's line gives the port it bound (its own banner says 0)
            found = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line)
            if found:
                self.url = found.group(1)
                started.set()
        started.set()  # it ended

    def __exit__(self, *exc: object) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._reader.join(10)
        if process.stdout is not None:
            process.stdout.close()

    @property
    def otlp_endpoint(self) -> str:
        """What OTEL_EXPORTER_OTLP_ENDPOINT names: spans go to `{it}/v1/traces`."""
        return self.url

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span Phoenix holds in `project`, from its REST API (every page)."""
        spans: list[dict[str, Any]] = []
        cursor: str | None = None
        with httpx.Client(base_url=self.url, timeout=30) as client:
            while True:
                params: dict[str, Any] = {"limit": 1000}
                if cursor:
                    params["cursor"] = cursor
                answer = client.get(f"/v1/projects/{project}/spans", params=params)
                if answer.status_code == 404:  # no span reached the project yet
                    return []
                answer.raise_for_status()
                body = answer.json()
                spans += body["data"]
                cursor = body.get("next_cursor")
                if not cursor:
                    return spans


if __name__ == "__main__":
    try:
        print(phoenix_python())
    except PhoenixUnavailable as exc:
        sys.exit(str(exc))
