"""A platform sandbox service on this machine, and the agent's backend for a sandbox in it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from agentctl.sandbox import SandboxKey, SandboxService, SandboxSpec
from agentctl.sandbox.platform import PlatformPool, PlatformSandbox
from agentctl.settings import SandboxSettings
from tests.conftest import eventually

OpenSandbox = Callable[..., Awaitable[PlatformSandbox]]
LimitedSandbox = Callable[..., Awaitable[PlatformSandbox]]


@pytest.fixture
async def service(sandbox_dir: Path) -> AsyncIterator[SandboxService]:
    """The service with the settings of the environment."""
    service = SandboxService(SandboxSettings.from_env(), sandbox_dir)
    yield service
    await service.aclose()


@pytest.fixture
async def limited_sandbox(
    sandbox_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[LimitedSandbox]:
    """A sandbox on a service of its own whose settings are the environment plus
    `AGENTCTL_SANDBOX_<NAME>=value` for each `name=value` given."""
    services: list[SandboxService] = []

    async def open_(**settings: str) -> PlatformSandbox:
        for name, value in settings.items():
            monkeypatch.setenv(f"AGENTCTL_SANDBOX_{name.upper()}", value)
        service = SandboxService(SandboxSettings.from_env(), sandbox_dir / f"s{len(services)}")
        services.append(service)
        return await PlatformPool(service, SandboxSpec()).acquire(SandboxKey("coder", "t"))

    yield open_
    for service in services:
        await service.aclose()


@pytest.fixture
def open_sandbox(service: SandboxService) -> OpenSandbox:
    """The sandbox of `thread` (of assistant "coder"), as the agent's tools use it."""

    async def open_(thread: str = "thread-1", spec: SandboxSpec | None = None) -> PlatformSandbox:
        pool = PlatformPool(service, spec or SandboxSpec())
        return await pool.acquire(SandboxKey("coder", thread))

    return open_


def sandbox_processes() -> int:
    """Processes of the sandbox user on this machine (sandboxes run as a user of their own
    when the tests run as root; otherwise as ours, which this cannot tell apart)."""
    if os.geteuid() != 0:
        return 0
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                alive = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
                count += alive and entry.stat().st_uid == 65534
            except (FileNotFoundError, ProcessLookupError):
                continue
    return count


async def cancel_and_wait_for_the_end(command: Awaitable[object]) -> None:
    """Start `command`, give up on it after half a second, and wait until no process of the
    sandbox is left."""
    running = asyncio.ensure_future(command)
    await asyncio.sleep(0.5)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running

    async def gone() -> bool:
        return sandbox_processes() == 0

    await eventually(gone, 5, "the cancelled command's processes to end")
