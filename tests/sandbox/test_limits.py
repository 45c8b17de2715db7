"""A sandbox's memory (all its processes and its /tmp) and its disk space are limited: the
command going past a limit is stopped and told why, other sandboxes and the service go on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentctl.errors import CgroupError
from agentctl.sandbox import SandboxKey, SandboxService, SandboxSpec
from agentctl.sandbox.cgroup import open_cgroups
from agentctl.sandbox.platform import PlatformPool, PlatformSandbox
from agentctl.settings import SandboxSettings
from tests.sandbox.conftest import LimitedSandbox

# Each python process holds 100 MB of its own, then waits to be stopped.
HOLD = "python3 -c 'import time; b = b\"x\" * (100 << 20); time.sleep(30)'"
MEMORY_NOTE = "[the command was stopped: its processes used more than the memory limit of 200 MB"


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(f"{HOLD} & {HOLD} & {HOLD} & wait", id="three-processes"),
        pytest.param(f"head -c 150M /dev/zero > /tmp/fill; {HOLD}", id="tmp-and-a-process"),
    ],
)
async def test_memory_of_all_processes_is_limited(
    limited_sandbox: LimitedSandbox, command: str
) -> None:
    sandbox = await limited_sandbox(memory_mb="200", timeout_seconds="20")
    result = await sandbox.aexecute(command)
    assert result.exit_code == 137
    assert MEMORY_NOTE in result.output
    after = await sandbox.aexecute("echo still fine")
    assert (after.output, after.exit_code) == ("still fine\n", 0)


async def test_one_process_under_the_limit_runs(limited_sandbox: LimitedSandbox) -> None:
    sandbox = await limited_sandbox(memory_mb="200")
    result = await sandbox.aexecute(
        "python3 -c 'import time; b = b\"x\" * (100 << 20); time.sleep(1); print(len(b))'"
    )
    assert (result.output, result.exit_code) == (f"{100 << 20}\n", 0)


@pytest.fixture
async def two_sandboxes(
    sandbox_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[PlatformSandbox, PlatformSandbox]]:
    """Two sandboxes of a service allowing each 20 MB of disk."""
    monkeypatch.setenv("AGENTCTL_SANDBOX_DISK_MB", "20")
    service = SandboxService(SandboxSettings.from_env(), sandbox_dir)
    pool = PlatformPool(service, SandboxSpec())
    yield (
        await pool.acquire(SandboxKey("coder", "full")),
        await pool.acquire(SandboxKey("coder", "other")),
    )
    await service.aclose()


async def test_a_sandbox_filling_its_disk_is_stopped_and_others_go_on(
    two_sandboxes: tuple[PlatformSandbox, PlatformSandbox],
) -> None:
    full, other = two_sandboxes
    filled = await full.aexecute(
        "head -c 15M /dev/zero > a; head -c 15M /dev/zero > b; sleep 10; echo not stopped"
    )
    assert filled.exit_code == 137
    assert (
        "[the command was stopped: its files in /workspace went past the disk limit of 20 MB]"
        in (filled.output)
    )
    assert "not stopped" not in filled.output
    # Over its limit, its files cannot grow, and a file upload is refused, saying why ...
    grow = await full.aexecute("sh -c 'echo more >> a'; echo exit=$?; du -m a")
    assert grow.output.endswith("exit=153\n15\ta\n"), grow.output  # 128 + SIGXFSZ
    written = await full.awrite("/workspace/notes.txt", "hello")
    assert written.error is not None
    assert "past its disk limit of 20 MB (AGENTCTL_SANDBOX_DISK_MB)" in written.error
    assert "t.coder.full" in written.error
    # ... while the other sandbox works as before,
    fine = await other.aexecute("head -c 10M /dev/zero > a && du -m a")
    assert (fine.output, fine.exit_code) == ("10\ta\n", 0)
    assert (await other.awrite("/workspace/notes.txt", "hello")).error is None
    # and freeing space makes the full one usable again.
    freed = await full.aexecute("rm b && echo freed")
    assert (freed.output, freed.exit_code) == ("freed\n", 0)
    assert (await full.awrite("/workspace/notes.txt", "hello")).error is None


async def test_cgroup_setting_off_or_a_folder_that_is_not_one(tmp_path: Path) -> None:
    with pytest.raises(CgroupError, match="off"):
        open_cgroups("off")
    with pytest.raises(CgroupError, match=f"{tmp_path} is not a cgroup v2 folder"):
        open_cgroups(str(tmp_path))


async def test_a_prepared_cgroup_that_is_not_one_is_refused_at_start(
    limited_sandbox: LimitedSandbox, tmp_path: Path
) -> None:
    from agentctl.errors import SandboxUnavailable

    with pytest.raises(SandboxUnavailable, match="AGENTCTL_SANDBOX_CGROUP"):
        await limited_sandbox(cgroup=str(tmp_path))
