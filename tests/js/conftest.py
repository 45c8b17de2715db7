"""The JavaScript tier: the official JS SDK (`@langchain/langgraph-sdk`) in Node, and a React
page on its `useStream` hook in headless Chromium, against a real server on a free port.

The npm packages of tests/js are installed once (`npm ci`) when node_modules is missing or does
not match package-lock.json. Node.js 20+, npm and Chromium are required: a machine
without them fails these tests with what to install, it never skips them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentctl.testing import ScriptedModelServer
from tests.npm import npm_ci

JS_DIR = Path(__file__).parent


@pytest.fixture(scope="session")
def js_packages(node: str) -> Path:
    """tests/js/node_modules, installed by `npm ci` when it does not match the lock file."""
    return npm_ci(JS_DIR)


@pytest.fixture(scope="session")
def page_dir(node: str, js_packages: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The React page of tests/js/page, bundled by esbuild into a temporary folder."""
    out = tmp_path_factory.mktemp("page")
    done = subprocess.run(
        [node, str(JS_DIR / "scripts" / "build_page.mjs"), str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"building the page failed:\n{done.stdout}\n{done.stderr}"
    return out


async def run_node(
    node: str, script: str, args: Any, *, env: dict[str, str] | None = None, timeout: float = 60
) -> dict[str, Any]:
    """Run tests/js/scripts/`script` with `args` as JSON in argv, without blocking the event
    loop (the server under test may run in it), and return the JSON object it prints last."""
    process = await asyncio.create_subprocess_exec(
        node,
        str(JS_DIR / "scripts" / script),
        json.dumps(args),
        cwd=JS_DIR,
        env={**os.environ, **(env or {})},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"{script} did not finish in {timeout} s") from None
    lines = out.decode().strip().splitlines()
    failure = f"{script} exited with {process.returncode}:\n{out.decode()}\n{err.decode()}"
    assert process.returncode == 0, failure
    assert lines, failure
    result: dict[str, Any] = json.loads(lines[-1])
    return result


# The scripted model for every server of this tier (as tests/server does), and the process
# environment restored after each test (`load_agent` exports a project's `.env`).


@pytest.fixture(autouse=True)
def _model_env(model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in model_server.env.items():
        monkeypatch.setenv(name, value)
    for name in ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(name, raising=False)  # the JS SDK would send it as x-api-key


@pytest.fixture(autouse=True)
def _restore_environ() -> Iterator[None]:
    saved = os.environ.copy()
    yield
    for name in os.environ.keys() - saved.keys():
        del os.environ[name]
    os.environ.update(saved)
