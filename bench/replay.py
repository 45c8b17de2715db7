"""Replays and new runs on a long thread, against a short one, on both backends.

A thread of `--runs` runs (1000) and one of `--short` runs (10), filled through the storage
API as the server fills them — each run's record and its events: `metadata`, `values` (the
thread's whole state: every message so far, as a values stream carries it), `updates`, eight
`messages` chunks, `values` again, its end — before (SQLite) or while (PostgreSQL + Redis)
the server runs. Then, on `agentctl dev` (SQLite) and on `agentctl serve` (PostgreSQL + a
fresh Redis prefix), with the official langgraph-sdk client:

- the replay of the thread's first run and of its last run (`join_stream` from `-`): time
  (median of `--repeat`) and the peak RSS it added to the server. The first runs of both
  threads are alike; the last run of the long thread streams its larger state (2,000
  messages in each `values` event, against 20);
- the replay of the whole thread (`GET /threads/{id}/stream` from `-`, to its last event):
  time and peak RSS added;
- new runs (`--new` one-turn streamed runs, one after another) on the long thread and on a
  fresh one: p50 latency.

The filled threads have no checkpoints, so a new run's graph does the same work on both:
the difference is what the server does with the thread's event log. Run it on other code
with `PYTHONPATH=/path/to/src` (the servers and the filling use that code).

    .venv/bin/python bench/replay.py [--runs 1000] [--short 10] [--new 10] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from common import QUIET_ENV, child, serving_pid, tail
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agentctl import serde
from agentctl.settings import Settings
from agentctl.storage.base import Run, Storage, Thread
from agentctl.storage.open import open_storage
from agentctl.testing import services
from agentctl.testing.replicas import start_replica

KEY = "bench-deployment-key-0123456789abcdef"
AGENT = "replay"
MIB = 1024 * 1024


@dataclass
class Filled:
    thread_id: str
    first_run: str
    last_run: str
    last_event: str
    events: int
    bytes: int


def message(kind: str, text: str) -> dict[str, Any]:
    return {"type": kind, "content": text, "id": str(uuid.uuid4())}


def run_events(run_id: str, state: list[dict[str, Any]], i: int) -> list[tuple[str, Any]]:
    """The events of one run on a thread whose messages so far are `state` (extended)."""
    question, answer = message("human", f"question {i}"), message("ai", f"answer {i} " * 4)
    state.append(question)
    events: list[tuple[str, Any]] = [("metadata", {"run_id": run_id, "attempt": 1})]
    events.append(("values", {"messages": list(state)}))
    events.append(("updates", {"model": {"messages": [answer]}}))
    chunk_meta = {"langgraph_node": "model", "langgraph_step": 1, "run_id": run_id}
    for word in answer["content"].split()[:8]:
        chunk = {"type": "AIMessageChunk", "content": word + " ", "id": answer["id"]}
        events.append(("messages", [chunk, chunk_meta]))
    state.append(answer)
    events.append(("values", {"messages": list(state)}))
    events.append(("__end__", {"run_id": run_id, "status": "success"}))
    return events


async def fill(storage: Storage, assistant_id: str, runs: int) -> Filled:
    """A thread of `runs` finished runs with their events, written as the server writes
    them (each run noting where the log stood when it was created, on code that does)."""
    from agentctl.engine import streams

    mark_start = getattr(streams, "mark_start", None)
    thread_id = str(uuid.uuid4())
    await storage.threads.create(Thread(thread_id=thread_id, metadata={}))
    state: list[dict[str, Any]] = []
    count = size = 0
    runs_ids = [str(uuid.uuid4()) for _ in range(runs)]
    last = ""
    for i, run_id in enumerate(runs_ids):
        run = Run(run_id, thread_id, assistant_id, status="success", attempt=1,
                  kwargs={"stream_mode": ["values"]})  # fmt: skip
        if mark_start is not None:
            await mark_start(storage, run)
        await storage.runs.create(run)
        appended = await asyncio.gather(
            *(
                storage.events.append(thread_id, run_id, name, serde.dumps(data))
                for name, data in run_events(run_id, state, i)
            )
        )
        count += len(appended)
        size += sum(len(event.data) for event in appended)
        last = appended[-1].id
    return Filled(thread_id, runs_ids[0], runs_ids[-1], last, count, size)


async def filled(settings: Settings, namespace: str | None, runs: list[int]) -> list[Filled]:
    storage, close = await open_storage(settings, namespace)
    try:
        threads = [await fill(storage, "00000000-0000-0000-0000-000000000000", n) for n in runs]
        await asyncio.sleep(0.1)  # the embedded database commits what was appended last
        return threads
    finally:
        await storage.close()
        await close()


# -- measuring -----------------------------------------------------------------------------


def _status(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for pid {pid}")


async def peak_growth(pid: int, action: Callable[[], Awaitable[None]]) -> tuple[float, float]:
    """(seconds `action` took, MiB its peak RSS added to process `pid`): the peak is reset
    first (`/proc/PID/clear_refs`)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    before = _status(pid, "VmRSS")
    started = time.perf_counter()
    await action()
    took = time.perf_counter() - started
    return took, max(0.0, _status(pid, "VmHWM") - before)


async def replayed(
    pid: int, replay: Callable[[], Awaitable[None]], repeat: int
) -> tuple[float, float]:
    """(median seconds, largest peak RSS added in MiB) of `repeat` replays."""
    figures = [await peak_growth(pid, replay) for _ in range(repeat)]
    return statistics.median(t for t, _ in figures), max(m for _, m in figures)


async def replay_first_run(client: LangGraphClient, thread: Filled) -> None:
    await replay_run(client, thread.thread_id, thread.first_run)


async def replay_last_run(client: LangGraphClient, thread: Filled) -> None:
    await replay_run(client, thread.thread_id, thread.last_run)


async def replay_run(client: LangGraphClient, thread_id: str, run_id: str) -> None:
    parts = client.runs.join_stream(thread_id, run_id, last_event_id="-")
    events = [part async for part in parts]
    assert events[-1].event == "end", events[-3:]


async def replay_thread(client: LangGraphClient, thread: Filled) -> None:
    parts = await client.threads.join_stream(thread.thread_id, last_event_id="-")
    async with contextlib.aclosing(parts):  # type: ignore[type-var]
        async for part in parts:
            if part.id == thread.last_event:
                return


async def new_runs(client: LangGraphClient, thread_id: str, count: int) -> list[float]:
    latencies = []
    for i in range(count):
        started = time.perf_counter()
        parts = [
            part
            async for part in client.runs.stream(
                thread_id,
                AGENT,
                input={"messages": [{"role": "user", "content": f"hello {i}"}]},
                stream_mode="values",
            )
        ]
        latencies.append(time.perf_counter() - started)
        assert parts[-1].event == "end", parts[-1]
    return latencies


async def measure(
    title: str, url: str, pid: int, threads: list[Filled], args: argparse.Namespace
) -> None:
    client = get_client(url=url, api_key=KEY, timeout=600)
    long, short = threads
    print(f"{title}: threads of {args.runs} and {args.short} runs "
          f"({long.events} events, {long.bytes / MIB:.0f} MiB, and {short.events} events)",
          flush=True)  # fmt: skip
    rows: list[tuple[str, float, float, str]] = []
    await replay_first_run(client, short)  # warm up
    replays = {
        "replay of the first run": replay_first_run,
        "replay of the last run": replay_last_run,
        "replay of the thread": replay_thread,
    }
    for name, replay in replays.items():
        (t_short, m_short), (t_long, m_long) = [
            await replayed(pid, functools.partial(replay, client, thread), args.repeat)
            for thread in (short, long)
        ]
        rows.append((f"{name}: time", t_short * 1000, t_long * 1000, "ms"))
        rows.append((f"{name}: peak RSS added", m_short, m_long, "MiB"))
    await new_runs(client, (await client.threads.create())["thread_id"], 2)  # warm up
    fresh = (await client.threads.create())["thread_id"]
    on_fresh = await new_runs(client, fresh, args.new)
    on_long = await new_runs(client, long.thread_id, args.new)
    rows.append(("new run p50", statistics.median(on_fresh) * 1000,
                 statistics.median(on_long) * 1000, "ms"))  # fmt: skip
    print(f"  {'':40} {f'{args.short} runs':>12} {f'{args.runs} runs':>12} {'ratio':>8}")
    for label, a, b, unit in rows:
        ratio = f"{b / a:.2f}x" if unit == "ms" else ""
        print(f"  {label:40} {a:>9.1f} {unit:3}{b:>9.1f} {unit:3}{ratio:>7}", flush=True)
    await client.aclose()


# -- servers -------------------------------------------------------------------------------


def write_project(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "agent.toml").write_text(f'[agent]\nname = "{AGENT}"\nmodel = "openai:scripted"\n')
    (folder / "AGENTS.md").write_text("You answer.\n")
    return folder


def wait_ok(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"{url} exited:\n{tail(log)}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    sys.exit(f"{url} did not start:\n{tail(log)}")


async def on_sqlite(tmp: Path, env: dict[str, str], args: argparse.Namespace) -> None:
    project = write_project(tmp / "dev")
    data = project / ".agentctl" / "data"
    threads = await filled(Settings.from_env({"AGENTCTL_DATA_DIR": str(data)}), None,
                           [args.runs, args.short])  # fmt: skip
    port = services.free_port()
    command = [sys.executable, "-m", "agentctl", "dev", "--port", str(port), "--allow-blocking"]
    url = f"http://127.0.0.1:{port}"
    with child(command, tmp / "dev.log", env=env, cwd=project) as server:
        wait_ok(url, server, tmp / "dev.log")
        pid = serving_pid(server.pid, port)
        await measure("agentctl dev (SQLite)", url, pid, threads, args)


async def on_redis(tmp: Path, env: dict[str, str], args: argparse.Namespace) -> None:
    database = services.fresh_database(services.postgres_url())
    serve_env = {**env, "DATABASE_URL": database, "REDIS_URL": services.redis_url(),
                 "AGENTCTL_REDIS_PREFIX": services.fresh_prefix(), "PLATFORM_API_KEY": KEY,
                 "AGENTCTL_LOG_LEVEL": "warning"}  # fmt: skip
    replica = start_replica(serve_env, tmp / "serve")
    try:
        project = write_project(tmp / "deployed")
        deploy = [sys.executable, "-m", "agentctl", "deploy"]
        done = subprocess.run(deploy, cwd=project, env={**serve_env, "PLATFORM_URL": replica.url},
                              capture_output=True, text=True)  # fmt: skip
        if done.returncode != 0:
            sys.exit(f"agentctl deploy failed:\n{done.stdout}\n{done.stderr}")
        threads = await filled(Settings.from_env(serve_env), AGENT, [args.runs, args.short])
        title = "agentctl serve (PostgreSQL + Redis)"
        await measure(title, replica.url, replica.process.pid, threads, args)
    finally:
        replica.terminate(30)
        await unlink(serve_env)
        services.drop_database(database)


async def unlink(env: dict[str, str]) -> None:
    from agentctl.storage.redis import connect_redis
    from agentctl.storage.redis.client import unlink_prefixed

    client = await connect_redis(env["REDIS_URL"])
    await unlink_prefixed(client, env["AGENTCTL_REDIS_PREFIX"] + ":")
    await client.aclose()


@contextlib.contextmanager
def scripted_model(tmp: Path) -> Iterator[dict[str, str]]:
    port = services.free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH")},
        **QUIET_ENV,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": "scripted",
    }
    command = [sys.executable, "-m", "agentctl.testing", "--port", str(port)]
    with child(command, tmp / "model.log", env=env):
        yield env


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs on the long thread")
    parser.add_argument("--short", type=int, default=10, help="runs on the short thread")
    parser.add_argument("--new", type=int, default=10, help="new runs timed on each thread")
    parser.add_argument("--repeat", type=int, default=5, help="replays of each kind")
    parser.add_argument("--backends", default="sqlite,redis", help="sqlite, redis or both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentctl-replay-") as name:
        tmp = Path(name)
        with scripted_model(tmp) as env:
            if "sqlite" in args.backends:
                await on_sqlite(tmp, env, args)
            if "redis" in args.backends:
                await on_redis(tmp, env, args)


if __name__ == "__main__":
    asyncio.run(main())
