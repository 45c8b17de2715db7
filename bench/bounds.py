"""What a client with no sign-in, or a project too large, can make a server hold.

    python bench/bounds.py [--slots 40] [--sockets 45]

1. `agentctl dev` with `AGENTCTL_MAX_CONNECTIONS=slots`; `sockets` clients each send a
   WebSocket handshake with one header line of 9 KB and keep their socket open. Printed: how
   many were answered (and how) or closed within 15 s, and what a plain `GET /ok` gets while
   they stay open.
2. `agentctl deploy --dry-run` of a project holding a sparse skill file of 1 GiB: its exit
   status, time and peak resident memory (from the kernel, `wait4`).

Run it with another checkout's sources first on the path (`PYTHONPATH=../main/src`) to
compare.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = {
    "agent.toml": '[agent]\nname = "bounds"\nmodel = "openai:gpt-4.1"\n',
    "AGENTS.md": "You help.\n",
    "skills/data/SKILL.md": "---\nname: data\ndescription: Looks things up\n---\nSee it.\n",
    "skills/data/dataset.bin": "",
}
HANDSHAKE = (
    b"GET /threads/t/stream/events HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
    b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    b"Sec-WebSocket-Version: 13\r\nX-Padding: " + b"x" * 9000 + b"\r\n\r\n"
)


def write_project(root: Path) -> Path:
    for path, text in PROJECT.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "sk-bench", "PYTHONUNBUFFERED": "1", **extra}


async def answer_of(port: int, seconds: float) -> tuple[str, asyncio.StreamWriter]:
    """What the server does with one oversized handshake within `seconds` (the client keeps
    its socket open)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(HANDSHAKE)
    try:
        raw = await asyncio.wait_for(reader.read(), seconds)
    except TimeoutError:
        return "held (no answer, not closed)", writer
    except ConnectionResetError:
        return "reset", writer
    return (raw.split(b"\r\n", 1)[0].decode() or "closed without an answer"), writer


async def plain_request(port: int) -> str:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    try:
        raw = await asyncio.wait_for(reader.read(), 10)
    except TimeoutError:
        raw = b"no answer in 10 s"
    except ConnectionResetError:
        raw = b"reset (a 503 at once, unread)"
    writer.close()
    return raw.split(b"\r\n", 1)[0].decode()


async def held_slots(root: Path, slots: int, sockets: int) -> None:
    dev = subprocess.Popen(
        [sys.executable, "-m", "agentctl", "dev", "--port", "0"],
        cwd=root, env=env(AGENTCTL_MAX_CONNECTIONS=str(slots)),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert dev.stdout is not None
        port = 0
        for line in dev.stdout:
            if found := re.search(r"API\s+http://[\d.]+:(\d+)", line):
                port = int(found.group(1))
                break
        assert port, "agentctl dev did not start"
        started = time.monotonic()
        answers = await asyncio.gather(*(answer_of(port, 15) for _ in range(sockets)))
        waited = time.monotonic() - started
        counts: dict[str, int] = {}
        for answer, _ in answers:
            counts[answer] = counts.get(answer, 0) + 1
        print(f"{sockets} oversized WebSocket handshakes on {slots} slots ({waited:.1f} s):")
        for answer, count in sorted(counts.items()):
            print(f"  {count:4d}  {answer}")
        print(f"GET /ok while their sockets stay open: {await plain_request(port)}")
        for _, writer in answers:
            writer.close()
    finally:
        dev.terminate()
        dev.wait(30)


def sparse_dry_run(root: Path) -> None:
    os.truncate(root / "skills/data/dataset.bin", 1 << 30)
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "agentctl", "deploy", "--dry-run"],
        cwd=root, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    said = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.monotonic() - started
    errors = [line for line in said.splitlines() if line.startswith("error:")]
    print("deploy --dry-run of a project with a sparse 1 GiB skill file:")
    print(f"  exit {os.waitstatus_to_exitcode(status)} in {seconds:.1f} s, "
          f"peak RSS {usage.ru_maxrss / 1024:.0f} MiB")  # fmt: skip
    print(f"  {errors[0][:110] if errors else 'no error: the revision was built'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", type=int, default=40)
    parser.add_argument("--sockets", type=int, default=45)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = write_project(Path(folder))
        asyncio.run(held_slots(root, args.slots, args.sockets))
        sparse_dry_run(root)


if __name__ == "__main__":
    main()
