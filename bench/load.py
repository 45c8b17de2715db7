"""Load: many concurrent users whose runs spend most of their time waiting for the model.

Each run of the demo deep agent (agentctl.testing.demo) is one user message scripted so that
the scripted model plans with a tool call after 0.5 s (`@sleep 0.5 @call write_file …`), then
streams a final answer of 60 tokens 25 ms apart (`@slow 0.025 @say …`): about 2 s of model
time, as a real agent run spends most of its time waiting for its model.

N users, each with the official `langgraph-sdk` client (16 users to a client, a pool of
connections each), run one-turn runs back to back, each on a fresh thread, streamed with
`stream_mode=["updates", "messages-tuple"]`, for `--seconds` (a run started before the end
finishes). The targets take turns at each N (`--rounds R`: R turns each, pooled in the
summary):

- `dev`: `agentctl dev` (embedded SQLite);
- `serve`, `serve2`: `agentctl serve` on PostgreSQL + Redis with one replica, and with two
  (each user sticks to one replica, alternately, as a round-robin load balancer would);
  `DATABASE_URL` / `REDIS_URL` or throwaway servers, a database of each cluster's own;
- `langgraph`: `langgraph dev --n-jobs-per-worker <largest N>` on the same agent;
- `floor`: no server: the agent's graph itself, in a process of its own driven in process
  (bench/load_floor.py), with an in-memory checkpointer: what the agent costs, which a
  server can only add to (not in the default `--targets`).

Printed per target and N: runs/s beside the ideal (N / model time), the wait each run adds to
its model time (p50, p99: client-observed run time, request sent to stream closed, minus the
model time), the p99 gap between consecutive tokens of one run at the client, the tokens lost
(60 expected of each run the server accepted), the requests that failed (a user tries again 1 s
later; e.g. past `AGENTCTL_MAX_CONNECTIONS`, 4096, agentctl refuses connections with 503), the
servers' CPU seconds per run and their peak RSS (summed over replicas), and this client's CPU
per run (when it nears 1 s/s, the client is the bottleneck). RSS/user is the servers' peak RSS
less their RSS after a warm-up run, per concurrent user: what a run in flight (or pending, with
its open stream) costs, with whatever earlier phases left in the heap.

Last, each load target the measured targets allow (dev ≥ 0.95× the floor's runs/s and ≤ 1.1×
its CPU per run, serve ≥ 0.9× dev's runs/s, dev ≥ 2× langgraph dev's runs/s at 256 users or
more) is printed with its ratio over the pooled rounds and the median of its ratios within a
round, whose two phases ran minutes apart rather than across the whole run.

`--observed` measures what observability costs: agentctl's servers export their traces to a
local OTLP receiver (bench/common.py `OtlpSink`) and store every run's usage, and `dev` and
`serve` are each measured in turns beside themselves with both off (`dev-bare`, `serve-bare`:
`AGENTCTL_METERING=false`, no exporter); the CPU per run of each pair is printed per N.

agentctl runs as configured; `--server-env KEY=VALUE` (repeatable) sets a variable for every
server, e.g. `--server-env AGENTCTL_MAX_RUNS=64` (the runs one replica executes at once,
256 by default; `agentctl dev` reads it too).

    .venv/bin/pip install -e '.[dev,bench]'      # or: make bench-load ARGS="…"
    .venv/bin/python bench/load.py [--users 32,64,256,1024] [--seconds 30]
        [--targets floor,dev,serve,serve2,langgraph] [--rounds 3] [--server-env KEY=VALUE]...
        [--observed]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from cluster import KEY, Cluster, deploy, serve_env
from common import (
    cpu_seconds,
    rss_mib,
    serving_pid,
    user_input,
)
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import StreamMode
from targets import (
    ServerTarget,
    Setup,
    Started,
    bench_setup,
    export_traces,
    start_langgraph_dev,
    start_ours,
)

from agentctl.testing import services
from agentctl.testing.openai_wire import OpenAIWire
from agentctl.testing.script import Call, Reply, Say, ToolCall, parse_script
from agentctl.testing.wire import Chat

TOKENS = 60
ANSWER = " ".join(f"word{i:02d}" for i in range(TOKENS))
PLAN = '{"file_path": "/plan.md", "content": "1. think\\n2. answer"}'
SCRIPT = f"@sleep 0.5 @call write_file {PLAN}\n@slow 0.025 @say {ANSWER}"
STREAM_MODE: list[StreamMode] = ["updates", "messages-tuple"]
RSS_EVERY = 0.25  # seconds between RSS samples of the servers
TARGETS = (
    "floor",
    "dev",
    "serve",
    "serve2",
    "langgraph",
    "dev-bare",
    "serve-bare",
    "dev-before",
    "serve-before",
)
# What `--observed` turns on in agentctl's servers: traces exported to a local receiver.
BARE = {"AGENTCTL_METERING": "false"}  # and no OTEL_EXPORTER_OTLP_ENDPOINT


def model_seconds(script: str) -> float:
    """The time the scripted model takes over `script`'s replies, as agentctl's
    langchain-openai streams them (with the usage chunk): each step's sleep, plus its slow
    delay between consecutive chunks."""
    total = 0.0
    chat = Chat([], stream=True, include_usage=True)
    for step in parse_script(script):
        action = step.action
        if isinstance(action, Say):
            reply = Reply(content=action.text)
        elif isinstance(action, Call):
            reply = Reply(
                tool_calls=tuple(ToolCall("id", c.name, c.arguments) for c in action.calls)
            )
        else:
            raise ValueError(f"unexpected step {step}")
        total += step.sleep + step.slow * (len(OpenAIWire().stream(reply, chat, "m")) - 1)
    return total


# ---------------------------------------------------------------------------------------------
# Targets


@dataclass
class LoadTarget:
    """A server (or replicas) under load: the URL each user is sent to, the processes measured."""

    label: str
    urls: list[str]
    pids: list[int]
    assistant: str
    headers: dict[str, str] = field(default_factory=dict)
    idle_rss: float = 0.0  # MiB, summed over the processes, after the warm-up run

    def cpu(self) -> float:
        return sum(cpu_seconds(pid) for pid in self.pids)

    def rss(self) -> float:
        return sum(rss_mib(pid) for pid in self.pids)


def from_started(label: str, started: Started) -> LoadTarget:
    """A target started by the harness of `server_vs_langgraph_dev`."""
    assert isinstance(started.target, ServerTarget)
    assert started.pid is not None
    harness = started.target.harness
    url = str(harness.client.http.client.base_url).rstrip("/")
    return LoadTarget(label, [url], [started.pid], harness.assistant)


async def start_dev(
    setup: Setup, stack: contextlib.AsyncExitStack, *, bare: bool = False, before: bool = False
) -> LoadTarget:
    label = "agentctl dev, metering and tracing off" if bare else "agentctl dev"
    source = setup.before if before else None
    if source is not None:
        label += f" ({source})"
    return from_started(label, await start_ours(setup, stack, bare=bare, source=source))


async def start_langgraph(setup: Setup, stack: contextlib.AsyncExitStack) -> LoadTarget:
    label = f"langgraph dev (--n-jobs-per-worker {setup.concurrency})"
    return from_started(label, await start_langgraph_dev(setup, stack))


async def start_cluster(
    setup: Setup,
    stack: contextlib.AsyncExitStack,
    facts: dict[str, Any],
    overrides: dict[str, str],
    replicas: int,
    *,
    bare: bool = False,
    before: bool = False,
) -> LoadTarget:
    """`replicas` replicas of `agentctl serve` on a database of their own, the demo deployed;
    `overrides`: the `--server-env` variables; `bare`: with metering and tracing off;
    `before`: running agentctl from `--before`'s source."""
    database = services.fresh_database(services.postgres_url())
    stack.callback(services.drop_database, database)
    env = {**serve_env(facts, database), **overrides, **setup.ours_env}
    if bare:
        env = {k: v for k, v in env.items() if not k.startswith("OTEL_")} | BARE
    if before:
        assert setup.before is not None
        env["PYTHONPATH"] = str(setup.before)
    cluster = Cluster(env, setup.tmp / f"serve{replicas}{'-before' if before else ''}")
    stack.callback(cluster.stop)
    started = [cluster.start() for _ in range(replicas)]
    deploy(setup.project, started[0].url, env)
    pids = [serving_pid(r.process.pid, urlsplit(r.url).port or 0) for r in started]
    label = f"agentctl serve, {replicas} replica{'s' if replicas > 1 else ''}"
    if bare:
        label += ", metering and tracing off"
    if before:
        label += f" ({setup.before})"
    print(f"{label}: {', '.join(r.url for r in started)}, pids {pids}")
    return LoadTarget(label, [r.url for r in started], pids, "demo", {"x-api-key": KEY})


# ---------------------------------------------------------------------------------------------
# Users


@dataclass
class Tally:
    """What the users of one phase saw."""

    run_times: list[float] = field(default_factory=list)  # of the runs that succeeded
    gaps: list[float] = field(default_factory=list)  # between consecutive tokens of a run
    tokens_lost: int = 0
    errors: list[str] = field(default_factory=list)


def is_token(event: str, data: Any) -> bool:
    """A token of the main graph's answer: a `messages` event whose AI chunk has text."""
    if event != "messages" or not isinstance(data, list) or not data:
        return False
    chunk = data[0]
    return (
        isinstance(chunk, dict)
        and chunk.get("type") in ("AIMessageChunk", "ai")
        and isinstance(chunk.get("content"), str)
        and bool(chunk["content"])
    )


async def one_run(client: LangGraphClient, assistant: str, tally: Tally) -> None:
    """A one-turn run on a fresh thread (created before the clock starts). Its missing tokens
    count as lost once the server has accepted it (sent the first event); a refused request
    is an error only."""
    last: float | None = None
    tokens = 0
    accepted = False
    try:
        thread = (await client.threads.create())["thread_id"]
        started = time.perf_counter()
        async for part in client.runs.stream(
            thread,
            assistant,
            input=user_input(SCRIPT),
            stream_mode=STREAM_MODE,
        ):
            now = time.perf_counter()
            accepted = True
            if part.event == "error":
                raise RuntimeError(f"error event: {part.data}")
            if is_token(part.event, part.data):
                tokens += 1
                if last is not None:
                    tally.gaps.append(now - last)
                last = now
        tally.run_times.append(time.perf_counter() - started)
    except Exception as exc:
        tally.errors.append(f"{type(exc).__name__}: {exc}"[:300])
        raise
    finally:
        if accepted:
            tally.tokens_lost += max(0, TOKENS - tokens)


# Users sharing one SDK client (one pool of connections). httpcore's pool looks at each of
# its connections on every request and every response's end: one client for 256 users
# spent more CPU than the server it measured, on the same cores.
USERS_PER_CLIENT = 16


def sdk_client(url: str, headers: dict[str, str]) -> LangGraphClient:
    """The SDK's client without httpx's limit of 100 connections: each user holds one."""
    unlimited = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    http = httpx.AsyncClient(
        base_url=url,
        transport=httpx.AsyncHTTPTransport(retries=5, limits=unlimited),
        timeout=httpx.Timeout(connect=30, read=300, write=300, pool=30),
        headers=headers,
    )
    return LangGraphClient(http)


@dataclass
class Phase:
    """Figures of one target at one N."""

    users: int
    seconds: float
    tally: Tally
    server_cpu: float
    client_cpu: float
    peak_rss_mib: float
    idle_rss_mib: float

    @property
    def runs(self) -> int:
        return len(self.tally.run_times)


async def phase(
    target: LoadTarget, clients: list[LangGraphClient], users: int, args: argparse.Namespace
) -> Phase:
    """`users` users running back to back for `args.seconds`; those still running
    `args.drain` seconds later are cancelled and counted as failed."""
    tally = Tally()
    deadline = time.perf_counter() + args.seconds

    async def user(index: int) -> None:
        client = clients[index % len(clients)]
        while time.perf_counter() < deadline:
            try:
                await one_run(client, target.assistant, tally)
            except Exception:
                await asyncio.sleep(1)  # then tries again, as a user would

    peak = target.rss()
    cpu_before, client_before = target.cpu(), time.process_time()
    started = time.perf_counter()
    tasks = [asyncio.create_task(user(i)) for i in range(users)]
    finished = asyncio.ensure_future(asyncio.wait(tasks, timeout=args.seconds + args.drain))
    while not finished.done():
        await asyncio.wait([finished], timeout=RSS_EVERY)
        with contextlib.suppress(OSError):
            peak = max(peak, target.rss())
    _, pending = finished.result()
    elapsed = time.perf_counter() - started
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
        tally.errors += ["still running at the end of the drain"] * len(pending)
    return Phase(
        users,
        elapsed,
        tally,
        target.cpu() - cpu_before,
        time.process_time() - client_before,
        peak,
        target.idle_rss,
    )


def pooled(phases: list[Phase]) -> Phase:
    """The rounds of one target at one N as one phase: their runs, samples, seconds and CPU
    added up (so runs/s and CPU per run are over all rounds), their peak RSS the highest."""
    if len(phases) == 1:
        return phases[0]
    tally = Tally()
    for one in phases:
        tally.run_times += one.tally.run_times
        tally.gaps += one.tally.gaps
        tally.tokens_lost += one.tally.tokens_lost
        tally.errors += one.tally.errors
    return Phase(
        phases[0].users,
        sum(p.seconds for p in phases),
        tally,
        sum(p.server_cpu for p in phases),
        sum(p.client_cpu for p in phases),
        max(p.peak_rss_mib for p in phases),
        min(p.idle_rss_mib for p in phases),
    )


async def floor_phase(setup: Setup, users: int, args: argparse.Namespace) -> Phase:
    """The same load on the agent in a process of its own, no server (bench/load_floor.py)."""
    script = Path(__file__).with_name("load_floor.py")
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(setup.project), "--users", str(users),
        "--seconds", str(args.seconds), "--script", SCRIPT, "--tokens", str(TOKENS),
        env=setup.env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"bench/load_floor.py failed:\n{err.decode()[-3000:]}")
    figures = json.loads(out.decode().strip().splitlines()[-1])
    tally = Tally(figures["run_times"], figures["gaps"], figures["tokens_lost"], figures["errors"])
    return Phase(users, figures["elapsed"], tally, figures["cpu"], 0.0,
                 figures["peak_rss_mib"], figures["idle_rss_mib"])  # fmt: skip


# ---------------------------------------------------------------------------------------------
# The report


def pct(values: list[float], q: int) -> float | None:
    """The q-th percentile of `values`, None when empty."""
    if len(values) < 2:
        return values[0] if values else None
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def cells(result: Phase, model: float) -> list[str]:
    tally, runs = result.tally, result.runs

    def ms(value: float | None) -> str:
        return "n/a" if value is None else f"{value * 1000:.0f}"

    def per_run(seconds: float) -> str:
        return f"{seconds * 1000 / runs:.1f}" if runs else "n/a"

    waits = [t - model for t in tally.run_times]
    return [
        str(result.users),
        f"{runs / result.seconds:.1f}",
        f"{result.users / model:.1f}",
        ms(pct(waits, 50)),
        ms(pct(waits, 99)),
        ms(pct(tally.gaps, 99)),
        str(tally.tokens_lost),
        str(len(tally.errors)),
        per_run(result.server_cpu),
        f"{result.peak_rss_mib:.0f}",
        f"{(result.peak_rss_mib - result.idle_rss_mib) * 1024 / result.users:.0f}",
        per_run(result.client_cpu),
    ]


HEAD = [
    "users",
    "runs/s",
    "ideal",
    "wait p50",
    "wait p99",
    "gap p99",
    "lost tok",
    "errors",
    "srv CPU",
    "peak RSS",
    "RSS/user",
    "cli CPU",
]
UNITS = ["", "", "", "ms", "ms", "ms", "", "", "ms/run", "MiB", "KiB", "ms/run"]
WIDTHS = [6, 8, 7, 9, 9, 8, 9, 7, 8, 9, 9, 8]


def row(values: list[str]) -> str:
    return "  ".join(v.rjust(w) for v, w in zip(values, WIDTHS, strict=True))


# The load targets: a ratio of two targets' figures, its bound, and the least N
# it applies at.
GOALS = (
    ("dev / floor, runs/s", "dev", "floor", "runs", ">=", 0.95, 0),
    ("dev / floor, CPU per run", "dev", "floor", "cpu", "<=", 1.1, 0),
    ("serve / dev, runs/s", "serve", "dev", "runs", ">=", 0.9, 0),
    ("dev / langgraph dev, runs/s", "dev", "langgraph", "runs", ">=", 2.0, 256),
)


def figure(phase: Phase, measure: str) -> float | None:
    """Runs/s, or server CPU seconds per run."""
    if not phase.runs:
        return None
    return phase.runs / phase.seconds if measure == "runs" else phase.server_cpu / phase.runs


def ratio(a: Phase, b: Phase, measure: str) -> float | None:
    x, y = figure(a, measure), figure(b, measure)
    return x / y if x is not None and y else None


def goals(rounds: dict[int, dict[str, list[Phase]]]) -> None:
    """Each goal whose targets were measured, per N: the ratio of the pooled rounds, and the
    median of the ratios within each round (the two targets measured minutes apart, not
    the whole run: this machine's speed drifts by tens of percent over a run)."""
    lines = []
    for what, a, b, measure, sense, bound, least in GOALS:
        for users, phases in rounds.items():
            if a not in phases or b not in phases or users < least:
                continue
            pooled_ratio = ratio(pooled(phases[a]), pooled(phases[b]), measure)
            within = [ratio(x, y, measure) for x, y in zip(phases[a], phases[b], strict=True)]
            per_round = [r for r in within if r is not None]
            if pooled_ratio is None or not per_round:
                continue
            met = pooled_ratio >= bound if sense == ">=" else pooled_ratio <= bound
            lines.append(
                f"{what:<30}{users:>6}{pooled_ratio:>9.2f}{statistics.median(per_round):>11.2f}"
                f"   {sense} {bound:<5g} {'met' if met else 'NOT MET'}"
            )
    if lines:
        print("\nagainst the load targets (ratio of the pooled rounds; median within a round)")
        print(f"{'':<30}{'users':>6}{'pooled':>9}{'per round':>11}   target")
        print("\n".join(lines))


def report(results: dict[str, list[Phase]], labels: dict[str, str], args: Any) -> None:
    model = model_seconds(SCRIPT)
    print()
    print(
        f"demo deep agent, scripted model: a tool call after 0.5 s, then {TOKENS} tokens 25 ms"
        f" apart = {model:.3f} s of model time a run; {args.seconds:g} s per phase"
    )
    print("wait = run time at the client − model time; gap = between tokens of one run")
    if args.rounds > 1:
        print(f"{args.rounds} rounds per target and N, pooled")
    if args.server_env:
        print(f"server env: {' '.join(args.server_env)}")
    for key, phases in results.items():
        print(f"\n{labels[key]}")
        print(row(HEAD))
        print(row(UNITS))
        for result in phases:
            print(row(cells(result, model)))
        for result in phases:
            for error in sorted(set(result.tally.errors))[:3]:
                print(f"  N={result.users}: {result.tally.errors.count(error)}× {error}")
    for key in ("dev", "serve"):
        if key in results and f"{key}-bare" in results:
            observability(key, results[key], results[f"{key}-bare"], args)


def observability(key: str, on: list[Phase], off: list[Phase], args: Any) -> None:
    """`key` as measured (usage stored; with `--observed`, traces exported) against itself
    with both off, per N; the target: CPU per run within 10 %."""
    traces = "exported to a local OTLP receiver" if args.observed else "off"
    print(f"\n{key}: metering on (usage stored, traces {traces}) against both off")
    print("   users   CPU/run off   CPU/run on   on/off   runs/s off   runs/s on")
    for a, b in zip(on, off, strict=True):
        cpu_on = a.server_cpu * 1000 / a.runs if a.runs else None
        cpu_off = b.server_cpu * 1000 / b.runs if b.runs else None
        share = cpu_on / cpu_off if cpu_on and cpu_off else None
        verdict = "" if share is None else ("PASS" if share <= 1.1 else "FAIL")
        print(
            f"{a.users:>8}{cpu_off or 0:>14.1f}{cpu_on or 0:>13.1f}{share or 0:>8.3f}×"
            f"{b.runs / b.seconds:>13.1f}{a.runs / a.seconds:>12.1f}   {verdict}"
        )


# ---------------------------------------------------------------------------------------------


async def measure(args: argparse.Namespace, tmp: Path) -> None:
    overrides = dict(item.split("=", 1) for item in args.server_env)
    with bench_setup(
        tmp,
        env=overrides,
        runs=0,
        latency_runs=0,
        concurrency=max(args.users),  # langgraph dev's --n-jobs-per-worker
        turns=1,
        ours_cmd="dev",
        user=None,
        before=args.before,
    ) as (setup, facts):
        async with contextlib.AsyncExitStack() as stack:
            if args.observed:
                sink = export_traces(setup, stack)
            starters: dict[str, Callable[[], Awaitable[LoadTarget]]] = {
                "dev": lambda: start_dev(setup, stack),
                "dev-bare": lambda: start_dev(setup, stack, bare=True),
                "serve": lambda: start_cluster(setup, stack, facts, overrides, 1),
                "serve-bare": lambda: start_cluster(setup, stack, facts, overrides, 1, bare=True),
                "dev-before": lambda: start_dev(setup, stack, before=True),
                "serve-before": lambda: start_cluster(
                    setup, stack, facts, overrides, 1, before=True
                ),
                "serve2": lambda: start_cluster(setup, stack, facts, overrides, 2),
                "langgraph": lambda: start_langgraph(setup, stack),
            }
            targets: dict[str, LoadTarget] = {}
            clients: dict[str, list[LangGraphClient]] = {}
            labels = {}
            if "floor" in args.targets:
                labels["floor"] = "the agent in process (no server)"
            for key in (k for k in args.targets if k != "floor"):
                print(f"starting {key} …", flush=True)
                targets[key] = target = await starters[key]()
                groups = -(-max(args.users) // USERS_PER_CLIENT)
                clients[key] = [
                    sdk_client(url, target.headers) for _ in range(groups) for url in target.urls
                ]
                for client in clients[key]:
                    stack.push_async_callback(client.http.client.aclose)
                await asyncio.gather(  # warm-up
                    *(one_run(client, target.assistant, Tally()) for client in clients[key])
                )
                target.idle_rss = target.rss()
            labels.update({key: t.label for key, t in targets.items()})
            results: dict[str, list[Phase]] = {key: [] for key in args.targets}
            by_users: dict[int, dict[str, list[Phase]]] = {}
            print(row(HEAD), flush=True)
            for users in args.users:
                rounds: dict[str, list[Phase]] = {key: [] for key in args.targets}
                for turn in range(args.rounds):
                    for key in args.targets:
                        what = f"{key}: {users} users for {args.seconds:g} s"
                        if args.rounds > 1:
                            what += f", round {turn + 1} of {args.rounds}"
                        print(f"  {what}", flush=True)
                        if key == "floor":
                            result = await floor_phase(setup, users, args)
                        else:
                            result = await phase(targets[key], clients[key], users, args)
                        rounds[key].append(result)
                        print(row(cells(result, model_seconds(SCRIPT))), flush=True)
                        await asyncio.sleep(1)  # let the server settle
                for key, phases in rounds.items():
                    results[key].append(pooled(phases))
                by_users[users] = rounds
            report(results, labels, args)
            goals(by_users)
            if args.observed:
                print(f"\n{sink.summary()}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--users", default="32,64,256,1024", help="comma-separated Ns")
    parser.add_argument(
        "--targets", default=",".join(TARGETS[1:]), help=f"comma-separated, of {TARGETS}"
    )
    parser.add_argument("--seconds", type=float, default=30, help="per target and N")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="phases per target and N, taken in turns and pooled in the summary (this "
        "machine's speed drifts: more rounds, steadier ratios)",
    )
    parser.add_argument(
        "--drain",
        type=float,
        default=300,
        help="seconds the runs still going at the end may take before they count as failed",
    )
    parser.add_argument(
        "--observed",
        action="store_true",
        help="agentctl's servers export their traces to a local OTLP receiver, and dev and "
        "serve are each measured beside themselves with metering and tracing off (dev-bare, "
        "serve-bare): what observability costs",
    )
    parser.add_argument(
        "--before",
        type=Path,
        metavar="SRC",
        help="another checkout's src directory (e.g. a `git worktree` of main): dev and serve "
        "are each measured in turns beside themselves run from it (dev-before, serve-before)",
    )
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a variable for every server (repeatable), e.g. AGENTCTL_MAX_RUNS=64",
    )
    args = parser.parse_args()
    try:
        args.users = [int(n) for n in args.users.split(",") if n.strip()]
    except ValueError:
        parser.error("--users takes integers, e.g. 32,64")
    if args.rounds < 1:
        parser.error("--rounds needs at least 1")
    if not args.users or min(args.users) < 1:
        parser.error("--users needs at least one N ≥ 1")
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = set(args.targets) - set(TARGETS)
    if unknown or not args.targets:
        parser.error(f"--targets: any of {', '.join(TARGETS)}")
    if args.observed:  # each beside its bare twin, in turns
        for key in ("dev", "serve"):
            if key in args.targets and f"{key}-bare" not in args.targets:
                args.targets.insert(args.targets.index(key) + 1, f"{key}-bare")
    if args.before is not None:  # each beside its earlier self, in turns
        args.before = args.before.resolve()
        for key in ("dev", "serve"):
            if key in args.targets and f"{key}-before" not in args.targets:
                args.targets.insert(args.targets.index(key) + 1, f"{key}-before")
    elif any(t.endswith("-before") for t in args.targets):
        parser.error("--targets: dev-before and serve-before need --before SRC")
    if any("=" not in item for item in args.server_env):
        parser.error("--server-env takes KEY=VALUE")
    return args


def main() -> None:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="agentctl-bench-load-") as name:
        asyncio.run(measure(args, Path(name)))


if __name__ == "__main__":
    main()
