"""Node.js and npm packages for the tests that need them (tests/js, the console's build):
a machine without Node 20+ fails those tests saying what to install, it never skips them."""

from __future__ import annotations

import fcntl
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

NODE_MAJOR = 20


def _missing(what: str, install: str) -> None:
    pytest.fail(f"these tests need {what}: {install}", pytrace=False)


def node_executable() -> str:
    """The `node` executable (20 or newer), with npm beside it."""
    path = shutil.which("node")
    if path is None or shutil.which("npm") is None:
        _missing("Node.js 20+ and npm", "apt-get install nodejs npm (or Node 20 from nodejs.org)")
    assert path is not None
    version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    major = re.match(r"v(\d+)\.", version)
    if major is None or int(major.group(1)) < NODE_MAJOR:
        _missing(f"Node.js {NODE_MAJOR} or newer (found {version.strip()})", "install Node 20+")
    return path


def _installed_from_lock(folder: Path) -> bool:
    """Whether folder/node_modules holds exactly the packages of package-lock.json (npm's own
    record of what it installed, node_modules/.package-lock.json, against the lock file)."""
    installed = folder / "node_modules" / ".package-lock.json"
    if not installed.is_file():
        return False
    wanted = json.loads((folder / "package-lock.json").read_text())["packages"]
    have = json.loads(installed.read_text())["packages"]
    required = {path for path, entry in wanted.items() if path and not entry.get("optional")}
    return required <= have.keys() and all(
        path in wanted and wanted[path].get("version") == entry.get("version")
        for path, entry in have.items()
    )


def npm_ci(folder: Path) -> Path:
    """folder/node_modules, installed by `npm ci` unless it already holds the packages of
    package-lock.json; one process at a time (pytest-xdist's workers share the folder)."""
    with open(folder / "node_modules.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _install(folder)
    return folder / "node_modules"


def _install(folder: Path) -> None:
    if not _installed_from_lock(folder):
        npm = shutil.which("npm")
        assert npm is not None
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            pytest.fail(f"npm ci in {folder} failed:\n{done.stdout}\n{done.stderr}", pytrace=False)
