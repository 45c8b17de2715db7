"""Code in a sandbox cannot reach the server's files, environment, processes or network,
nor other sandboxes; runaway code ends with a clear tool result and the service goes on."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox.conftest import (
    LimitedSandbox,
    OpenSandbox,
    cancel_and_wait_for_the_end,
    sandbox_processes,
)

SECRET = "s3cret-platform-key-4d1f"


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLATFORM_API_KEY", SECRET)


async def test_the_server_environment_and_processes_are_invisible(
    secret_env: None, open_sandbox: OpenSandbox
) -> None:
    sandbox = await open_sandbox()
    result = await sandbox.aexecute(
        f"cat /proc/1/environ; cat /proc/*/environ; env; ls /proc | grep -c '^[0-9]'; "
        f"test -e /proc/{os.getpid()}/environ && echo server-visible; echo end"
    )
    assert SECRET not in result.output
    assert "server-visible" not in result.output
    assert result.output.rstrip().endswith("end")
    processes = int(result.output.split()[-2])
    assert processes <= 4  # the namespace's init, the shell and its commands


async def test_host_files_are_out_of_reach(
    open_sandbox: OpenSandbox, tmp_path: Path, sandbox_dir: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    sandbox = await open_sandbox()
    result = await sandbox.aexecute(
        f"cat /etc/shadow; cat {project}/.env; ls {sandbox_dir}; ls /root; "
        "touch /usr/evil /memories/skills/evil /evil /dev/evil; echo end"
    )
    assert SECRET not in result.output
    assert "cat: /etc/shadow: No such file or directory" in result.output
    assert f"cat: {project}/.env: No such file or directory" in result.output
    for folder in (sandbox_dir, "/root"):
        assert f"ls: cannot access '{folder}': No such file or directory" in result.output
    assert "touch: cannot touch '/usr/evil': Read-only file system" in result.output
    for path in ("/memories/skills/evil", "/evil", "/dev/evil"):
        assert f"touch: cannot touch '{path}': Read-only file system" in result.output
    assert not Path("/usr/evil").exists()
    assert result.output.rstrip().endswith("end")


async def test_no_network_by_default(open_sandbox: OpenSandbox) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        sandbox = await open_sandbox()
        result = await sandbox.aexecute(
            'python3 -c "import socket\n'
            f"for host in ('127.0.0.1', '10.1.2.3'):\n"
            "    try:\n"
            f"        socket.create_connection((host, {port}), timeout=2); print('connected')\n"
            "    except OSError as e: print('failed:', e)\""
        )
    assert "connected" not in result.output
    assert "failed: [Errno 111] Connection refused" in result.output  # not the host's
    assert "failed: [Errno 101] Network is unreachable" in result.output


@pytest.fixture
def host_process() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "60"])
    yield process
    process.kill()
    process.wait()


async def test_host_processes_cannot_be_signalled(
    open_sandbox: OpenSandbox, host_process: subprocess.Popen[bytes]
) -> None:
    sandbox = await open_sandbox()
    result = await sandbox.aexecute(f"kill -9 {host_process.pid} {os.getpid()}; echo $?")
    assert result.output.strip().endswith("1")
    assert "No such process" in result.output
    assert host_process.poll() is None


async def test_sandboxes_do_not_see_each_other(open_sandbox: OpenSandbox) -> None:
    first = await open_sandbox("thread-1")
    second = await open_sandbox("thread-2")
    await first.aexecute(f"echo {SECRET} > mine.txt")
    seen = await second.aexecute(
        f"ls -A /workspace; grep -rs {SECRET} / --exclude-dir=proc --exclude-dir=usr; echo end"
    )
    assert "mine.txt" not in seen.output
    assert SECRET not in seen.output.replace(f"grep -rs {SECRET}", "")
    assert (await first.aexecute("cat mine.txt")).output.strip() == SECRET


async def test_an_infinite_loop_is_stopped_at_the_time_limit(open_sandbox: OpenSandbox) -> None:
    sandbox = await open_sandbox()
    result = await sandbox.aexecute("while true; do :; done", timeout=1)
    assert result.exit_code == 124
    assert "the command was stopped: it ran longer than the time limit of 1 s" in result.output
    assert (await sandbox.aexecute("echo alive")).output.strip() == "alive"


async def test_cpu_time_is_limited(limited_sandbox: LimitedSandbox) -> None:
    sandbox = await limited_sandbox(cpu_seconds="1")
    result = await sandbox.aexecute("python3 -c 'while True: pass'", timeout=20)
    assert "it used more than its CPU time limit" in result.output


async def test_a_memory_hog_fails_inside_its_limit(open_sandbox: OpenSandbox) -> None:
    sandbox = await open_sandbox()
    result = await sandbox.aexecute("python3 -c 'block = bytearray(8 << 30)'")
    assert result.exit_code == 1
    assert "MemoryError" in result.output


async def test_a_fork_bomb_is_contained(open_sandbox: OpenSandbox) -> None:
    sandbox = await open_sandbox()
    result = await sandbox.aexecute(
        "bomb() { bomb | bomb & }; bomb; sleep 1; echo done", timeout=20
    )
    assert "fork" in result.output.lower() or "resource temporarily unavailable" in result.output
    await asyncio.sleep(0.5)
    assert sandbox_processes() == 0  # nothing outlived the command
    assert (await sandbox.aexecute("echo alive")).output.strip() == "alive"


async def test_huge_output_is_cut_and_the_command_stopped(open_sandbox: OpenSandbox) -> None:
    sandbox = await open_sandbox()
    result = await sandbox.aexecute("yes")
    assert result.truncated
    assert len(result.output) < 110_000
    assert "[output truncated to its first 100000 bytes]" in result.output
    assert "the command was stopped: it wrote more than" in result.output


async def test_file_size_is_limited(limited_sandbox: LimitedSandbox) -> None:
    sandbox = await limited_sandbox(file_size_mb="1")
    result = await sandbox.aexecute("head -c 5000000 /dev/zero > big.bin")
    assert "it wrote a file larger than the file size limit" in result.output
    size = await sandbox.aexecute("stat -c %s big.bin")
    assert int(size.output.strip()) == 1 << 20


async def test_a_cancelled_command_does_not_outlive_its_run(open_sandbox: OpenSandbox) -> None:
    sandbox = await open_sandbox()
    await cancel_and_wait_for_the_end(sandbox.aexecute("sleep 30 & sleep 30; echo never"))
