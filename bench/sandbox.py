"""The platform sandbox: what one command costs the agent, in process (`agentctl dev`, one
`serve` replica) and through `agentctl sandbox-server` over HTTP (many replicas).

Prints p50/p95 of: `true` (a fresh isolated process tree per command), `python3 -c pass`,
a file written and read back with the agent's file tools, and commands per second with 16
running at once.

    python bench/sandbox.py [--commands 200]

Needs bubblewrap. Sandboxes go to a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvicorn

from agentctl.sandbox import Sandboxes, SandboxKey, SandboxService, SandboxSpec
from agentctl.sandbox.client import SandboxClient
from agentctl.sandbox.http import sandbox_app
from agentctl.sandbox.platform import PlatformPool, PlatformSandbox
from agentctl.server.http import uvicorn_config
from agentctl.settings import SandboxSettings

KEY = "bench-key"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def timed(call: Callable[[], Awaitable[object]], times: int) -> list[float]:
    samples = []
    for _ in range(times):
        start = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def measure(label: str, sandboxes: Sandboxes, commands: int) -> None:
    sandbox: PlatformSandbox = await PlatformPool(sandboxes, SandboxSpec(image="host")).acquire(
        SandboxKey("bench", label)
    )
    rows = {
        "true": await timed(lambda: sandbox.aexecute("true"), commands),
        "python3 -c pass": await timed(lambda: sandbox.aexecute("python3 -c pass"), commands),
        "write + read a file": await timed(lambda: _write_read(sandbox), max(1, commands // 4)),
    }
    for what, samples in rows.items():
        print(f"  {label:<10} {what:<22} p50 {statistics.median(samples):6.1f} ms"
              f"   p95 {percentile(samples, 0.95):6.1f} ms")  # fmt: skip
    limit = asyncio.Semaphore(16)

    async def one() -> None:
        async with limit:
            await sandbox.aexecute("true")

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(commands)))
    rate = commands / (time.perf_counter() - start)
    print(f"  {label:<10} {'true, 16 at once':<22} {rate:6.0f} commands/s")


async def _write_read(sandbox: PlatformSandbox) -> None:
    path = f"/workspace/{time.perf_counter_ns()}.txt"
    await sandbox.awrite(path, "x" * 1000)
    await sandbox.aread(path)


async def main(commands: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="agentctl-bench-sandboxes-"))
    folder.chmod(0o711)
    service = SandboxService(SandboxSettings.from_env({}), folder)
    try:
        print(f"platform sandbox, {commands} commands each (host image)")
        await measure("in process", service, commands)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        uv = uvicorn.Server(uvicorn_config(sandbox_app(service, KEY), log_level="warning"))
        task = asyncio.create_task(uv.serve(sockets=[sock]))
        while not uv.started:
            await asyncio.sleep(0.01)
        client = SandboxClient(f"http://127.0.0.1:{sock.getsockname()[1]}", KEY, timeout=60)
        await measure("over HTTP", client, commands)
        await client.aclose()
        uv.should_exit = True
        await task
    finally:
        await service.aclose()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", type=int, default=200)
    asyncio.run(main(parser.parse_args().commands))
