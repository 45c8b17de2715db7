"""The console shipped in the Python package is the one its sources build, and the server
serves it at /ui/ as a browser expects: public, cached by ETag, gzipped, under a strict
content security policy."""

from __future__ import annotations

import subprocess

import pytest

from agentctl.server.routes.console import assets
from tests.console.conftest import ROOT
from tests.npm import npm_ci

CONSOLE = ROOT / "console"


@pytest.mark.node
def test_the_shipped_console_is_built_from_its_sources(node: str) -> None:
    npm_ci(CONSOLE)
    done = subprocess.run(
        [node, str(CONSOLE / "build.mjs"), "--check"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_the_package_holds_the_console() -> None:
    files = assets()
    assert {"index.html", "console.js", "console.css"} <= files.keys()
    page = files["index.html"].body.decode()
    assert 'src="console.js"' in page
    assert 'href="console.css"' in page
