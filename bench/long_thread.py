"""One long conversation: `--turns` one-message turns on one thread, `agentctl dev` against
`langgraph dev` in the same run.

The demo agent (agentctl.testing.demo) with the scripted model answers each turn; both servers
are driven over HTTP by the official `langgraph-sdk` client, one streamed run at a time
(`client.runs.stream(thread, assistant, input=..., stream_mode=...)`, by default
`values` + `messages-tuple`, as a chat client streams the thread's state and the model's
tokens). The targets take turns: turn N of each, then turn N + 1, so a shared machine's drift
falls on all of them alike.

It prints, for each target:

- the first and last turns' latency (request sent → stream closed; the median of the first
  and of the last `--window` turns, 10 by default, to keep one slow turn from being the
  figure), and the growth between them;
- the server's CPU time in the first and last turns (the same medians);
- the bytes it stores (once the servers have stopped, so that everything is written:
  agentctl's data folder — SQLite and its WAL, less the pages SQLite holds free for its next
  writes —, `langgraph dev`'s `.langgraph_api` folder), less what it stored before the first
  turn, and per turn;

then the targets of issue 36: storage per turn ≤ 3× `langgraph dev`'s, and last-turn latency
growth ≤ `langgraph dev`'s growth + 20 ms.

`langgraph dev` starts a queued run only when a worker next polls its queue, so part of each
of its turns is spent waiting (`run_wait_time_ms` in its log, 0.6–0.9 s here), and where the
poll falls moves as its runs grow longer: in one run of 500 turns the wait shrank from 860
to 652 ms, hiding that much of its growth; in another it did not. The bench also prints its
latency without that wait, and compares with that growth too.

`--baseline REF` adds a third target, `agentctl dev` on the code of git revision REF (its
`src/` exported to a temporary folder and put first on the server's PYTHONPATH): the figures
before and after a change, in the same run as their anchor. `--env NAME=VALUE` (repeatable)
sets agentctl's settings for both agentctl targets, e.g. `--env AGENTCTL_EVENT_FOLD_SECONDS=0`
to fold each run's token events as soon as it ends.

    make bench-setup
    .venv/bin/python bench/long_thread.py [--turns 150] [--baseline main]
        [--targets ours,langgraph] [--stream-mode values,messages-tuple] [--window 10]
    make bench-long-thread ARGS="--turns 500"
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import user_input
from targets import ServerTarget, Setup, bench_setup, start_langgraph_dev, start_server

from agentctl.testing import PLAIN_PREFIX
from agentctl.testing.demo import write_demo
from agentctl.testing.services import free_port

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024
ANSI = re.compile(r"\x1b\[[0-9;]*m")
WAIT = re.compile(r"\brun_wait_time_ms=(\d+)")


@dataclass
class Measured:
    label: str
    folder: Path  # what it stores
    target: ServerTarget
    stack: contextlib.AsyncExitStack
    thread_id: str = ""
    latencies: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # the server's CPU seconds per turn
    waits: list[float] = field(default_factory=list)  # langgraph dev's queue wait per turn
    bytes_before: int = 0
    bytes_after: int = 0
    error: str | None = None

    def stored_per_turn(self) -> float:
        return (self.bytes_after - self.bytes_before) / max(len(self.latencies), 1)


def queue_waits(log: Path, thread_id: str) -> list[float]:
    """The queue wait (seconds) of each run `langgraph dev` ran on the thread, in order, from
    its log."""
    waits = []
    for line in log.read_text(errors="replace").splitlines():
        line = ANSI.sub("", line)
        ours = "Background run succeeded" in line and f"thread_id={thread_id}" in line
        if ours and (found := WAIT.search(line)):
            waits.append(int(found.group(1)) / 1000)
    return waits


def folder_bytes(folder: Path) -> int:
    """The bytes of the files under `folder` (blocks allocated: a sparse file counts what it
    holds), less the free pages of SQLite files (a fold leaves pages free, which the next
    writes take: the file does not grow until they are used)."""
    total = 0
    for path in folder.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file():
                total += path.stat().st_blocks * 512
                if path.suffix == ".db":
                    total -= free_pages_bytes(path)
    return total


def free_pages_bytes(path: Path) -> int:
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            (free,) = conn.execute("PRAGMA freelist_count").fetchone()
            (size,) = conn.execute("PRAGMA page_size").fetchone()
    except sqlite3.Error:
        return 0
    return int(free) * int(size)


def export_source(ref: str, into: Path) -> Path:
    """`src/` of git revision `ref`, written under `into`; returns the folder to import from."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


async def start_agentctl_dev(
    label: str, setup: Setup, project: Path, env: dict[str, str], stack: contextlib.AsyncExitStack
) -> tuple[ServerTarget, Path]:
    """`agentctl dev --port N` in its own copy of the demo project; its data folder."""
    port = free_port()
    command = [sys.executable, "-m", "agentctl", "dev", "--port", str(port)]
    started = await start_server(label, command, port, setup, stack, env=env, cwd=project)
    assert isinstance(started.target, ServerTarget)
    return started.target, project / ".agentctl" / "data"


async def turn(target: ServerTarget, thread_id: str, index: int, modes: list[str]) -> float:
    """One streamed turn on the thread; its latency, checked for the scripted model's answer."""
    harness = target.harness
    text = f"hello {index}"
    started = time.perf_counter()
    last: Any = None
    async for part in harness.client.runs.stream(
        thread_id,
        harness.assistant,
        input=user_input(text),
        stream_mode=modes,  # type: ignore[arg-type]
        config=harness.config,  # type: ignore[arg-type]
    ):
        if part.event == "error":
            raise RuntimeError(f"turn {index} failed: {part.data}")
        if part.event == "values":
            last = part.data
    latency = time.perf_counter() - started
    messages = last.get("messages") if isinstance(last, dict) else None
    if not messages or messages[-1].get("content") != PLAIN_PREFIX + text:
        raise RuntimeError(f"unexpected last values after turn {index}: {str(last)[-300:]}")
    return latency


async def start_all(
    args: argparse.Namespace, setup: Setup, facts: dict[str, Any]
) -> list[Measured]:
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    ours_env = {**setup.env, **dict(e.split("=", 1) for e in args.env)}
    started: list[Measured] = []
    if args.baseline:
        src = export_source(args.baseline, setup.tmp / "baseline")
        env = {
            **ours_env,
            "PYTHONPATH": os.pathsep.join([str(src), ours_env.get("PYTHONPATH", "")]),
        }
        project = write_demo(setup.tmp / "demo-baseline", facts["calculator"], facts["library"])
        stack = contextlib.AsyncExitStack()
        label = f"agentctl dev ({args.baseline})"
        target, folder = await start_agentctl_dev(label, setup, project, env, stack)
        started.append(Measured(label, folder, target, stack))
    if "ours" in targets:
        project = write_demo(setup.tmp / "demo-ours", facts["calculator"], facts["library"])
        stack = contextlib.AsyncExitStack()
        target, folder = await start_agentctl_dev("agentctl dev", setup, project, ours_env, stack)
        started.append(Measured("agentctl dev", folder, target, stack))
    if "langgraph" in targets:
        stack = contextlib.AsyncExitStack()
        lg = await start_langgraph_dev(setup, stack)
        assert isinstance(lg.target, ServerTarget)
        folder = setup.tmp / "langgraph" / ".langgraph_api"
        started.append(Measured("langgraph dev", folder, lg.target, stack))
    return started


async def measure(args: argparse.Namespace) -> list[Measured]:
    modes = [m.strip() for m in args.stream_mode.split(",") if m.strip()]
    with tempfile.TemporaryDirectory(prefix="agentctl-long-thread-") as tmp_name:
        tmp = Path(tmp_name)
        with bench_setup(
            tmp,
            runs=args.turns,
            latency_runs=args.turns,
            concurrency=4,
            turns=1,
            ours_cmd="dev",
            user=None,
        ) as (setup, facts):
            targets = await start_all(args, setup, facts)
            try:
                for measured in targets:
                    measured.thread_id = await measured.target.harness.thread()
                # langgraph dev writes its folder every 10 s: wait for what it holds now.
                await asyncio.sleep(11)
                for measured in targets:
                    measured.bytes_before = folder_bytes(measured.folder)
                print(f"{args.turns} turns on one thread each, stream_mode={modes}")
                for index in range(1, args.turns + 1):
                    for measured in targets:
                        if measured.error is not None:
                            continue
                        try:
                            cpu = measured.target.cpu()
                            latency = await turn(measured.target, measured.thread_id, index, modes)
                            measured.cpu.append(measured.target.cpu() - cpu)
                        except Exception as exc:
                            measured.error = f"turn {index}: {exc}"
                            print(f"  {measured.label}: {measured.error}")
                            continue
                        measured.latencies.append(latency)
                    if index % 50 == 0 or index == args.turns:
                        line = ", ".join(
                            f"{m.label} {m.latencies[-1] * 1000:.0f} ms"
                            for m in targets
                            if m.latencies
                        )
                        print(f"  turn {index}: {line}", flush=True)
                if args.settle:
                    print(f"  waiting {args.settle:g} s (a retention window)", flush=True)
                    await asyncio.sleep(args.settle)
            finally:
                for measured in targets:  # stopped: everything they hold is written
                    await measured.stack.aclose()
            for measured in targets:
                measured.bytes_after = folder_bytes(measured.folder)
                if measured.label == "langgraph dev":
                    log = tmp / "langgraph-dev.log"
                    measured.waits = queue_waits(log, measured.thread_id)
                if args.keep:
                    name = measured.label.replace(" ", "-").replace("(", "").replace(")", "")
                    shutil.copytree(measured.folder, Path(args.keep) / name)
    return targets


def report(targets: list[Measured], window: int) -> None:
    print()
    print(
        f"  {'':<28}{'first (ms)':>11}{'last (ms)':>11}{'growth':>9}{'stored':>11}{'per turn':>11}"
        f"{'CPU first':>11}{'CPU last':>10}"
    )
    growth: dict[str, float] = {}
    cpu_growth: dict[str, float] = {}
    per_turn: dict[str, float] = {}
    for m in targets:
        if len(m.latencies) < 2:
            print(f"  {m.label:<28}{'failed':>11}  {m.error or ''}")
            continue
        size = min(window, len(m.latencies) // 2)
        first = statistics.median(m.latencies[:size]) * 1000
        last = statistics.median(m.latencies[-size:]) * 1000
        growth[m.label] = last - first
        per_turn[m.label] = m.stored_per_turn()
        stored = (m.bytes_after - m.bytes_before) / MIB
        cpu_first = statistics.median(m.cpu[:size]) * 1000
        cpu_last = statistics.median(m.cpu[-size:]) * 1000
        cpu_growth[m.label] = cpu_last - cpu_first
        print(
            f"  {m.label:<28}{first:>11.0f}{last:>11.0f}{last - first:>+9.0f}"
            f"{stored:>9.1f} MB{per_turn[m.label] / 1024:>8.1f} KB"
            f"{cpu_first:>8.0f} ms{cpu_last:>7.0f} ms"
        )
    print(f"  (first, last: the median of the first and of the last {window} turns; CPU: the")
    print("  server process's own, while the turn ran)")
    anchor = "langgraph dev"
    if anchor not in growth:
        return
    anchors = {f"{anchor}'s": growth.pop(anchor)}
    queued = next((m for m in targets if m.label == anchor and m.waits), None)
    if queued is not None and len(queued.waits) == len(queued.latencies):
        size = min(window, len(queued.latencies) // 2)
        wait = [w * 1000 for w in queued.waits]
        less = [(lat - w) * 1000 for lat, w in zip(queued.latencies, queued.waits, strict=True)]
        first, last = statistics.median(less[:size]), statistics.median(less[-size:])
        anchors[f"{anchor}'s without its queue wait"] = last - first
        print(f"  {anchor}'s queue wait: first {statistics.median(wait[:size]):.0f} ms, last "
              f"{statistics.median(wait[-size:]):.0f} ms; its latency without it: first "
              f"{first:.0f} ms, last {last:.0f} ms, growth {last - first:+.0f} ms")  # fmt: skip
    print()
    for label in growth:
        storage = per_turn[label] / per_turn[anchor] if per_turn[anchor] else float("inf")
        print(f"  {label}: storage per turn {storage:.2f}× langgraph dev's (target ≤ 3×) "
              f"{'PASS' if storage <= 3 else 'FAIL'}")  # fmt: skip
        for name, anchor_growth in anchors.items():
            extra = growth[label] - anchor_growth
            print(f"    latency growth {extra:+.0f} ms beyond {name} "
                  f"(target ≤ +20 ms) {'PASS' if extra <= 20 else 'FAIL'}")  # fmt: skip
        print(f"    server CPU per turn growth {cpu_growth[label]:+.0f} ms, {anchor}'s "
              f"{cpu_growth[anchor]:+.0f} ms")  # fmt: skip


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--turns", type=int, default=150, help="turns on the thread (150)")
    parser.add_argument(
        "--targets", default="ours,langgraph", help="any of ours, langgraph (default both)"
    )
    parser.add_argument(
        "--baseline", default=None, help="also agentctl dev on this git revision's src/"
    )
    parser.add_argument("--stream-mode", default="values,messages-tuple")
    parser.add_argument(
        "--window", type=int, default=10, help="turns whose median is the first/last figure"
    )
    parser.add_argument(
        "--env", action="append", default=[], help="NAME=VALUE for the agentctl servers"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="seconds to wait after the last turn before stopping the servers",
    )
    parser.add_argument("--keep", default=None, help="copy the data folders into this folder")
    args = parser.parse_args()
    if args.turns < 2:
        parser.error("--turns must be ≥ 2")
    if any("=" not in e for e in args.env):
        parser.error("--env takes NAME=VALUE")
    return args


if __name__ == "__main__":
    # Stopped (SIGTERM): the servers it started are stopped too, as on an error.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    arguments = parse_args()
    report(asyncio.run(measure(arguments)), arguments.window)
