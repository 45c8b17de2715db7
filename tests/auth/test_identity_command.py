"""`python -m agentctl.testing.identity`, as docs/testing.md tells a user to try `[auth]`
locally: its printed `.env` lines and tokens work against `agentctl dev`."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from tests.dev_process import StartDev


class PrintedIdentity:
    """What the command printed: the provider's `.env` lines and a token per user."""

    def __init__(self, output: str) -> None:
        self.env_lines = re.findall(r"^  (IDP_\w+=\S+)$", output, re.M)
        self.tokens = dict(re.findall(r"^  (\w+)\s+(\S{20,})$", output, re.M))


@pytest.fixture
def identity() -> Iterator[PrintedIdentity]:
    command = [sys.executable, "-m", "agentctl.testing.identity", "--port", "0"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("Press Ctrl-C"):
            break
    try:
        yield PrintedIdentity("".join(lines))
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
        proc.stdout.close()


def test_printed_tokens_sign_users_in_to_agentctl_dev(
    identity: PrintedIdentity, start_dev: StartDev, tmp_path: Path
) -> None:
    assert [line.split("=")[0] for line in identity.env_lines] == [
        "IDP_B_SECRET_KEY",
        "IDP_B_API_URL",
    ]
    assert set(identity.tokens) == {"alice", "bob"}
    project = tmp_path / "demo"
    project.mkdir()
    (project / "agent.toml").write_text(
        '[agent]\nname = "demo"\nmodel = "openai:scripted"\n\n[auth]\nprovider = "idp_b"\n'
    )
    (project / "AGENTS.md").write_text("You are the demo agent.\n")
    (project / ".env").write_text("\n".join(identity.env_lines) + "\n")
    url = start_dev("--config", project / "agent.toml", "--port", "0").ready()

    assert httpx.post(f"{url}/threads/search", json={}).status_code == 401
    alice, bob = (
        get_sync_client(url=url, api_key=None, headers={"Authorization": f"Bearer {token}"})
        for token in (identity.tokens["alice"], identity.tokens["bob"])
    )
    with alice, bob:
        thread = alice.threads.create()
        hello: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}]}
        done = alice.runs.wait(thread["thread_id"], "demo", input=hello)
        assert isinstance(done, dict)
        assert done["messages"][-1]["content"] == "scripted reply to: hi"
        assert [t["thread_id"] for t in alice.threads.search()] == [thread["thread_id"]]
        assert bob.threads.search() == []
        with pytest.raises(httpx.HTTPStatusError) as refused:
            bob.threads.get(thread["thread_id"])
        assert refused.value.response.status_code == 404


def test_a_taken_port_is_a_clear_error() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "agentctl.testing.identity", "--port", "0"],
        stdout=subprocess.PIPE, text=True,
    ) as first:  # fmt: skip
        assert first.stdout is not None
        port = re.search(r"127\.0\.0\.1:(\d+)", first.stdout.readline())
        assert port is not None
        second = subprocess.run(
            [sys.executable, "-m", "agentctl.testing.identity", "--port", port.group(1)],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        first.send_signal(signal.SIGINT)
        first.wait(10)
    assert second.returncode == 1
    assert second.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port.group(1)}")
    assert "Traceback" not in second.stderr
