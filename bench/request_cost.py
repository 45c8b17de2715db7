"""What one costly request does to the server: its peak RSS and how long `/ok` stalls.

`agentctl dev` serves a one-file agent (the scripted model of `agentctl.testing`, in a
process of its own) from a subprocess; a thread of this script polls `GET /ok` every 50 ms and
samples the server's RSS (VmRSS) as often. Three phases, each followed by a few quiet
seconds:

1. one `POST /runs/wait` whose input is `--messages` messages (200k: about 6 MB of JSON);
2. three such requests at once;
3. one `POST /threads/search` with a `values` filter over `--threads` threads (created first
   with `supersteps`, one message each, outside the measurement).

For each phase it prints the answer (status, seconds), the peak RSS, the RSS after the quiet
seconds, and the longest `/ok` answer (the stall of the event loop).

    .venv/bin/python bench/request_cost.py [--messages 200000] [--threads 10000]
        [--quiet 5]

Run it with `PYTHONPATH=<checkout>/src` to measure another checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from agentctl.testing.services import free_port

MIB = 1024 * 1024
AGENT = '[agent]\nname = "cost"\nmodel = "openai:scripted"\n'


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


@dataclass
class Monitor:
    """Polls `/ok` and samples RSS every `interval` seconds, in a thread of its own."""

    url: str
    pid: int
    interval: float = 0.05
    peak_rss: float = 0.0
    worst_ok: float = 0.0
    failures: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def reset(self) -> None:
        self.peak_rss, self.worst_ok, self.failures = rss_mib(self.pid), 0.0, 0

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as client:
            while not self._stop.is_set():
                started = time.perf_counter()
                try:
                    client.get("/ok").raise_for_status()
                except httpx.HTTPError:
                    self.failures += 1
                elapsed = time.perf_counter() - started
                self.worst_ok = max(self.worst_ok, elapsed)
                self.peak_rss = max(self.peak_rss, rss_mib(self.pid))
                self._stop.wait(max(0.0, self.interval - elapsed))

    @contextlib.contextmanager
    def running(self) -> Iterator[Monitor]:
        thread = threading.Thread(target=self.run, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()


@contextlib.contextmanager
def process(command: list[str], log: Path, **options: object) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        child = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **options
        )  # type: ignore[call-overload]
    try:
        yield child
    finally:
        child.terminate()
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def wait_ok(url: str, child: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if child.poll() is not None:
            sys.exit(f"{url} exited:\n{log.read_text(errors='replace')[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    sys.exit(f"{url} did not start:\n{log.read_text(errors='replace')[-3000:]}")


def big_input(messages: int) -> bytes:
    body = {
        "assistant_id": "cost",
        "input": {"messages": [{"role": "user", "content": "hi"} for _ in range(messages)]},
    }
    return json.dumps(body, separators=(",", ":")).encode()


async def runs_wait(client: httpx.AsyncClient, body: bytes) -> str:
    started = time.perf_counter()
    response = await client.post(
        "/runs/wait", content=body, headers={"content-type": "application/json"}
    )
    return f"{response.status_code} in {time.perf_counter() - started:.1f} s"


async def make_threads(client: httpx.AsyncClient, count: int) -> None:
    semaphore = asyncio.Semaphore(8)

    async def one(i: int) -> None:
        update = {"values": {"messages": [{"role": "user", "content": f"m{i}"}]}}
        body = {"supersteps": [{"updates": [{**update, "as_node": "model"}]}]}
        async with semaphore:
            (await client.post("/threads", json=body)).raise_for_status()

    await asyncio.gather(*(one(i) for i in range(count)))


async def search(client: httpx.AsyncClient) -> str:
    wanted = {"messages": [{"role": "user", "content": "no such message"}]}
    started = time.perf_counter()
    response = await client.post("/threads/search", json={"values": wanted, "limit": 10})
    answer = f"{response.status_code} in {time.perf_counter() - started:.1f} s"
    return answer if response.status_code == 200 else f"{answer}: {response.text[:200]}"


async def measure(args: argparse.Namespace, url: str, monitor: Monitor) -> None:
    body = big_input(args.messages)
    print(f"server RSS at start: {rss_mib(monitor.pid):.0f} MiB")
    print(f"{'phase':42} {'answer':>22} {'peak RSS':>9} {'RSS after':>9} {'/ok stall':>9}")
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:

        async def phase(name: str, *work: asyncio.Future[str] | object) -> None:
            monitor.reset()
            answers = await asyncio.gather(*work)  # type: ignore[arg-type]
            await asyncio.sleep(args.quiet)
            answer = answers[0] if len(set(answers)) == 1 else " / ".join(answers)
            print(
                f"{name:42} {answer:>22} {monitor.peak_rss:>6.0f} MiB {rss_mib(monitor.pid):>5.0f}"
                f" MiB {monitor.worst_ok * 1000:>6.0f} ms"
                + (f"  ({monitor.failures} /ok failed)" if monitor.failures else "")
            )

        size = f"{len(body) / MIB:.1f} MB"
        await phase(f"runs/wait, {args.messages} messages ({size})", runs_wait(client, body))
        await phase("three of them at once", *(runs_wait(client, body) for _ in range(3)))
        started = time.perf_counter()
        await make_threads(client, args.threads)
        print(f"({args.threads} threads created in {time.perf_counter() - started:.0f} s)")
        await phase(f"threads/search values=, {args.threads} threads", search(client))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--quiet", type=float, default=5.0, help="seconds after each phase")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        project = tmp / "cost"
        project.mkdir()
        (project / "agent.toml").write_text(AGENT)
        (project / "AGENTS.md").write_text("You answer.\n")
        model_port, port = free_port(), free_port()
        env = {
            **os.environ,
            "OPENAI_BASE_URL": f"http://127.0.0.1:{model_port}/v1",
            "OPENAI_API_KEY": "scripted",
            "LANGSMITH_TRACING": "false",
        }
        model_cmd = [sys.executable, "-m", "agentctl.testing", "--port", str(model_port)]
        dev_cmd = [sys.executable, "-m", "agentctl", "dev", "--port", str(port), "--allow-blocking"]
        url = f"http://127.0.0.1:{port}"
        with (
            process(model_cmd, tmp / "model.log", env=env),
            process(dev_cmd, tmp / "dev.log", env=env, cwd=project) as server,
        ):
            wait_ok(url, server, tmp / "dev.log")
            with Monitor(url, server.pid).running() as monitor:
                asyncio.run(measure(args, url, monitor))


if __name__ == "__main__":
    main()
