"""The agent server against `langgraph dev` and the in-process floor, in one run.

The same demo deep agent (agentctl.testing.demo: a skill, user memory, two subagents, two MCP
servers) with the same scripted model is served by

- agentctl's server (`--ours-cmd embedded`, the default: `open_embedded_server` +
  `create_app` under uvicorn, in a subprocess started by this script; `--ours-cmd dev`:
  `agentctl dev --port N` in the project, which also watches files and checks for blocking
  calls, so it is a little slower),
- `langgraph dev` (langgraph-cli[inmem], the `bench` extra) over a generated langgraph.json
  whose graph is built by agentctl's `load_project` + `load_agent`, with langgraph dev's own
  checkpointer and store (the revision's seeds are copied into that store over its HTTP API),

and both are driven over HTTP by the official `langgraph-sdk` async client. The floor is
`one_run` of bench/common.py (what bench/runtime_floor.py measures) on the same agent in
this process (InMemorySaver).
The scripted model and the MCP servers run in a helper subprocess shared by all three, so
neither server competes with them for this process's GIL.

Each run is a one-turn streamed run, `client.runs.stream(thread, assistant, input=...,
stream_mode="values")`, on a fresh thread; the floor's is `graph.ainvoke` on a fresh thread
id. Thread creation is EXCLUDED from every figure: each batch of runs creates its threads
before the clock starts. The targets are all started first, then:

0. one run that echoes the system prompt (the scripted model's `@say {system}`): a warning is
   printed when a server's prompt differs from the floor's, i.e. when it does other work;
1. warm-up of each (20 sequential runs, then `--concurrency` concurrent ones), then the
   servers' RSS "before";
2. `--latency-runs` sequential runs of each: latency p50/p95 (request sent → stream closed),
   time to first event (the `metadata` event) and to the first `values` event, and the CPU
   time per run of the process that runs the graph;
3. the rest of `--runs` at `--concurrency` concurrent streams: throughput (runs/s);
4. the servers' RSS "after" (VmRSS of the process that listens on the port), growth per
   1000 runs.

In phases 2 and 3 the targets take turns (`--turns`, 5 by default): a fifth of the runs of
each, then the next fifth, so that the machine's drift (a shared VM's speed moves by ±20%
within minutes) is shared by all of them instead of showing as a difference between them.

It prints one table with the three columns, the ratios ours/floor and ours/langgraph dev, and
the targets of DESIGN.md §6: sequential p50 ≤ 1.3× floor, throughput ≥ 0.8× floor and ≥ 2×
langgraph dev, RSS growth < 10 MiB / 1000 runs.

    .venv/bin/pip install -e '.[dev,bench]'      # or: make bench-server
    .venv/bin/python bench/server_vs_langgraph_dev.py [--runs 1000] [--latency-runs 300]
        [--concurrency 16] [--turns 5] [--targets floor,ours,langgraph]
        [--ours-cmd embedded|dev] [--observed]
        [--user ID] [--profile DIR]

`--observed` measures what observability costs: agentctl exports its traces to a local OTLP
receiver (bench/common.py `OtlpSink`) and stores every run's usage, and is measured in turns
beside itself with both off (target `ours-bare`: `AGENTCTL_METERING=false`, no exporter).

`--profile DIR` runs our launcher under cProfile: each of our targets writes the profile of
its main thread to `DIR/<target>.prof` when it stops (`python -m pstats DIR/ours.prof`).

By default no run has a user, so user memory is skipped everywhere: agentctl takes the user
from auth only, which a benchmark without auth cannot give. `--user ID` sends the user in the
run config (`graph_auth_user_id`), which the floor and `langgraph dev` honour and agentctl
ignores (the system-prompt check then warns).

`langgraph dev` runs with `--n-jobs-per-worker` = `--concurrency` (its default is 10), with
tracing, analytics and the version check off. Both servers log to files in a temporary folder
whose tail is printed when a server fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import one_run, p95, rss_mib, user_input
from targets import (
    Sample,
    ServerTarget,
    Setup,
    Started,
    Target,
    bench_setup,
    export_traces,
    start_langgraph_dev,
    start_ours,
    start_ours_bare,
)

from agentctl.project import load_project
from agentctl.runtime import load_agent
from agentctl.runtime.memory import USER_ID_KEY

WARMUP = 20


# ---------------------------------------------------------------------------------------------
# Figures


@dataclass
class Figures:
    """What one target measured; None where it does not apply or was not measured."""

    p50_ms: float | None = None
    p95_ms: float | None = None
    first_event_ms: float | None = None
    first_values_ms: float | None = None
    cpu_ms_per_run: float | None = None  # the server's CPU time per sequential run
    runs_per_s: float | None = None
    loaded_p50_ms: float | None = None
    rss_before_mib: float | None = None
    rss_after_mib: float | None = None
    runs: int = 0
    system_prompt: str | None = None
    error: str | None = None

    @property
    def rss_growth_per_1000(self) -> float | None:
        if self.rss_before_mib is None or self.rss_after_mib is None or not self.runs:
            return None
        return (self.rss_after_mib - self.rss_before_mib) * 1000 / self.runs


# ---------------------------------------------------------------------------------------------
# Targets, measured in turns


class FloorTarget(Target):
    """The graph in this process: `common.one_run` (InMemorySaver, InMemoryStore)."""

    label = "floor"

    def __init__(self, graph: Any) -> None:
        self.graph = graph

    async def run(self, prepared: Any, index: int) -> Sample:
        latency = await one_run(self.graph, index)
        return Sample(latency, 0.0, 0.0)

    def cpu(self) -> float:
        return time.process_time()


def shares(total: int, turns: int) -> list[int]:
    """`total` split into `turns` near-equal parts."""
    return [total // turns + (1 if i < total % turns else 0) for i in range(turns)]


async def measure_in_turns(
    targets: dict[str, Target], setup: Setup, progress: Callable[[str], None] = print
) -> dict[str, Figures]:
    """Sequential, then concurrent runs of every target, `setup.turns` times in turn, so
    that all of them see the same machine: on a shared VM its speed drifts by ±20% within
    minutes, which would otherwise show as a difference between the targets."""
    figures = {key: Figures() for key in targets}
    samples: dict[str, list[Sample]] = {key: [] for key in targets}
    cpu = dict.fromkeys(targets, 0.0)
    progress(f"  {setup.latency_runs} sequential runs each, in {setup.turns} turns")
    for turn, count in enumerate(shares(setup.latency_runs, setup.turns)):
        for key, target in targets.items():
            prepared = await target.prepare(count)
            before = target.cpu()
            for i, item in enumerate(prepared):
                samples[key].append(await target.run(item, turn * 100_000 + i))
            cpu[key] += target.cpu() - before
    for key, figure in figures.items():
        latencies = [s.latency * 1000 for s in samples[key]]
        figure.p50_ms, figure.p95_ms = statistics.median(latencies), p95(latencies)
        figure.cpu_ms_per_run = cpu[key] * 1000 / len(latencies)
        if isinstance(targets[key], ServerTarget):
            figure.first_event_ms = statistics.median(s.first_event * 1000 for s in samples[key])
            figure.first_values_ms = statistics.median(s.first_values * 1000 for s in samples[key])
    rest = setup.runs - setup.latency_runs
    if rest <= 0:
        return figures
    progress(f"  {rest} runs each, {setup.concurrency} concurrent, in {setup.turns} turns")
    elapsed = dict.fromkeys(targets, 0.0)
    loaded: dict[str, list[float]] = {key: [] for key in targets}
    for turn, count in enumerate(shares(rest, setup.turns)):
        for key, target in targets.items():
            seconds, latencies = await concurrently(target, count, setup.concurrency, turn)
            elapsed[key] += seconds
            loaded[key] += latencies
    for key, figure in figures.items():
        figure.runs_per_s = rest / elapsed[key]
        figure.loaded_p50_ms = statistics.median(loaded[key]) * 1000
    return figures


async def concurrently(
    target: Target, count: int, concurrency: int, turn: int
) -> tuple[float, list[float]]:
    """`count` runs, `concurrency` at a time: (seconds, latencies)."""
    prepared = await target.prepare(count)
    gate = asyncio.Semaphore(concurrency)

    async def bounded(i: int) -> Sample:
        async with gate:
            return await target.run(prepared[i], 1_000_000 + turn * 100_000 + i)

    started = time.perf_counter()
    samples = await asyncio.gather(*(bounded(i) for i in range(count)))
    return time.perf_counter() - started, [s.latency for s in samples]


async def warm_up(target: Target, concurrency: int) -> None:
    for i in range(WARMUP):
        await target.run((await target.prepare(1))[0], -1 - i)
    await concurrently(target, concurrency, concurrency, -1)


# ---------------------------------------------------------------------------------------------
# The three targets


class WithoutUser:
    """The graph, run without the user `common.one_run` puts in every config."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph

    async def ainvoke(self, input: Any, config: dict[str, Any]) -> Any:
        configurable = {k: v for k, v in config["configurable"].items() if k != USER_ID_KEY}
        return await self.graph.ainvoke(input, {**config, "configurable": configurable})


async def start_floor(setup: Setup, stack: contextlib.AsyncExitStack) -> Started:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore

    agent = await load_agent(
        load_project(setup.project), "bench", store=InMemoryStore(), checkpointer=InMemorySaver()
    )
    configurable = {"thread_id": "bench-system"}
    if setup.user:
        configurable[USER_ID_KEY] = setup.user
    graph = agent.graph if setup.user else WithoutUser(agent.graph)
    state = await graph.ainvoke(user_input("@say {system}"), {"configurable": configurable})
    return Started(FloorTarget(graph), str(state["messages"][-1].content))


STARTERS: dict[str, Callable[[Setup, contextlib.AsyncExitStack], Awaitable[Started]]] = {
    "floor": start_floor,
    "ours": start_ours,
    "ours-bare": start_ours_bare,
    "langgraph": start_langgraph_dev,
}


async def measure_all(setup: Setup, keys: list[str]) -> dict[str, Figures]:
    """Start every target, warm each up, measure them in turns, and read the servers' RSS
    before and after; a target that fails to start is reported, the others measured."""
    results: dict[str, Figures] = {}
    async with contextlib.AsyncExitStack() as stack:
        started: dict[str, Started] = {}
        for key in keys:
            print(f"starting {key} …", flush=True)
            try:
                ready = await STARTERS[key](setup, stack)
                await warm_up(ready.target, setup.concurrency)
                started[key] = ready
            except Exception as exc:
                results[key] = Figures(error=str(exc))
                print(f"  {key} failed: {exc}")
        await asyncio.sleep(0.5)
        rss_before = {k: rss_mib(s.pid) for k, s in started.items() if s.pid is not None}
        began = time.perf_counter()
        try:
            figures = await measure_in_turns({k: s.target for k, s in started.items()}, setup)
        except Exception as exc:  # a run failed: no figure of this session is comparable
            print(f"  the measurement failed: {exc}")
            return {**results, **{key: Figures(error=str(exc)) for key in started}}
        print(f"  measured in {time.perf_counter() - began:.0f} s", flush=True)
        await asyncio.sleep(0.5)
        for key, item in started.items():
            figure = figures[key]
            figure.system_prompt = item.system_prompt
            if item.pid is not None:
                figure.rss_before_mib, figure.rss_after_mib = rss_before[key], rss_mib(item.pid)
                figure.runs = max(setup.runs, setup.latency_runs)
            results[key] = figure
    return results


# ---------------------------------------------------------------------------------------------
# The report


def fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def fmt_ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}×"


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def report(results: dict[str, Figures], setup: Setup) -> None:
    floor, ours, lg = (results.get(k, Figures()) for k in ("floor", "ours", "langgraph"))
    print()
    print(
        f"demo deep agent, scripted model; {setup.latency_runs} sequential runs, "
        f"{setup.runs} runs in all per server, {setup.concurrency} concurrent streams;"
    )
    print("fresh thread per run, thread creation excluded; floor = in process, InMemorySaver;")
    print(f"user: {setup.user or 'none (user memory skipped)'}")
    print()
    rows: list[tuple[str, Callable[[Figures], float | None], int]] = [
        ("sequential p50 (ms)", lambda f: f.p50_ms, 1),
        ("sequential p95 (ms)", lambda f: f.p95_ms, 1),
        ("time to first event p50 (ms)", lambda f: f.first_event_ms, 1),
        ("time to first values p50 (ms)", lambda f: f.first_values_ms, 1),
        ("server CPU per run (ms)", lambda f: f.cpu_ms_per_run, 1),
        (f"throughput @{setup.concurrency} (runs/s)", lambda f: f.runs_per_s, 1),
        (f"latency p50 @{setup.concurrency} (ms)", lambda f: f.loaded_p50_ms, 1),
        ("RSS before (MiB)", lambda f: f.rss_before_mib, 1),
        ("RSS after (MiB)", lambda f: f.rss_after_mib, 1),
        ("RSS growth / 1000 runs (MiB)", lambda f: f.rss_growth_per_1000, 1),
    ]
    head = ("", "floor", "agentctl", "lg dev", "ours/floor", "ours/lg dev", "lg dev/floor")
    widths = (31, 9, 10, 9, 12, 13, 14)
    print(
        "".join(
            h.rjust(w) if i else h.ljust(w)
            for i, (h, w) in enumerate(zip(head, widths, strict=True))
        )
    )
    for name, get, digits in rows:
        values = [get(floor), get(ours), get(lg)]
        cells = [
            name,
            *(fmt(v, digits) for v in values),
            fmt_ratio(ratio(values[1], values[0])),
            fmt_ratio(ratio(values[1], values[2])),
            fmt_ratio(ratio(values[2], values[0])),
        ]
        print(
            "".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            )
        )
    print()
    print("targets (agentctl)")
    checks: list[tuple[str, float | None, Callable[[float], bool], str]] = [
        ("sequential p50 ≤ 1.3× floor", ratio(ours.p50_ms, floor.p50_ms), lambda r: r <= 1.3, "×"),
        (
            "throughput ≥ 0.8× floor",
            ratio(ours.runs_per_s, floor.runs_per_s),
            lambda r: r >= 0.8,
            "×",
        ),
        (
            "throughput ≥ 2× langgraph dev",
            ratio(ours.runs_per_s, lg.runs_per_s),
            lambda r: r >= 2,
            "×",
        ),
        ("RSS growth < 10 MiB / 1000 runs", ours.rss_growth_per_1000, lambda r: r < 10, " MiB"),
    ]
    for name, value, ok, unit in checks:
        shown = "n/a" if value is None else f"{value:.2f}{unit}"
        verdict = "" if value is None else ("PASS" if ok(value) else "FAIL")
        print(f"  {name:<34}{shown:>12}   {verdict}")
    bare = results.get("ours-bare")
    if bare is not None and not bare.error:
        observability(ours, bare, setup)
    reference = floor.system_prompt
    for key, label in (("ours", "agentctl"), ("langgraph", "langgraph dev")):
        figures = results.get(key)
        if figures is None:
            continue
        if figures.error:
            print(f"\n{label}: NOT MEASURED: {figures.error}")
        elif reference is not None and figures.system_prompt != reference:
            print(
                f"\nWARNING: {label}'s system prompt differs from the floor's (not the same work)"
            )
            other = figures.system_prompt or ""
            at = next(
                (i for i, (a, b) in enumerate(zip(reference, other, strict=False)) if a != b),
                min(len(reference), len(other)),
            )
            start = max(0, at - 80)
            print(f"  floor, from character {start}:  {reference[start : at + 160]!r}")
            print(f"  {label}, from character {start}:  {other[start : at + 160]!r}")


def observability(ours: Figures, bare: Figures, setup: Setup) -> None:
    """agentctl as measured (usage stored; with `--observed`, traces exported) against the
    same server with both off, and the target: CPU per run within 10 %."""
    exporting = "exported to a local OTLP receiver" if setup.ours_env else "off"
    print(f"\nmetering on (usage stored, traces {exporting}) against both off")
    rows: list[tuple[str, Callable[[Figures], float | None]]] = [
        ("server CPU per run (ms)", lambda f: f.cpu_ms_per_run),
        ("sequential p50 (ms)", lambda f: f.p50_ms),
        (f"throughput @{setup.concurrency} (runs/s)", lambda f: f.runs_per_s),
    ]
    print(f"  {'':<31}{'off':>9}{'on':>10}{'on/off':>10}")
    for name, get in rows:
        off, on = get(bare), get(ours)
        print(f"  {name:<31}{fmt(off):>9}{fmt(on):>10}{fmt_ratio(ratio(on, off)):>10}")
    cost = ratio(ours.cpu_ms_per_run, bare.cpu_ms_per_run)
    verdict = "" if cost is None else ("PASS" if cost <= 1.1 else "FAIL")
    print(f"  {'CPU per run within 10 %':<34}{fmt_ratio(cost):>12}   {verdict}")


async def main(args: argparse.Namespace) -> None:
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    with tempfile.TemporaryDirectory(prefix="agentctl-bench-") as tmp_name:
        tmp = Path(tmp_name)
        with (
            bench_setup(
                tmp,
                runs=args.runs,
                latency_runs=args.latency_runs,
                concurrency=args.concurrency,
                turns=args.turns,
                ours_cmd=args.ours_cmd,
                user=args.user,
                profile=args.profile,
            ) as (setup, _),
            contextlib.ExitStack() as exits,
        ):
            if args.observed:
                sink = export_traces(setup, exits)
                if "ours" in targets and "ours-bare" not in targets:
                    targets.insert(targets.index("ours") + 1, "ours-bare")
            results = await measure_all(setup, targets)
            report(results, setup)
            if args.observed:
                print(f"  {sink.summary()}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--runs", type=int, default=1000, help="runs per server in all (RSS figure; default 1000)"
    )
    parser.add_argument(
        "--latency-runs", type=int, default=300, help="sequential runs for latency (default 300)"
    )
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--turns",
        type=int,
        default=5,
        help="the targets take turns this many times in each phase (default 5)",
    )
    parser.add_argument(
        "--targets",
        default="floor,ours,langgraph",
        help="comma-separated, any of floor, ours, ours-bare (metering and tracing off), "
        "langgraph (default: floor, ours, langgraph)",
    )
    parser.add_argument(
        "--observed",
        action="store_true",
        help="agentctl exports its traces to a local OTLP receiver, and is measured beside "
        "itself with metering and tracing off (target ours-bare): what observability costs",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="our servers (launcher only) write a cProfile of their main thread to "
        "DIR/<target>.prof when they stop (read with python -m pstats)",
    )
    parser.add_argument(
        "--ours-cmd",
        choices=["embedded", "dev"],
        default="embedded",
        help="start our server with a launcher in this script, or with `agentctl dev --port N`",
    )
    parser.add_argument(
        "--user",
        default=None,
        help="user id to put in each run's config, so the runs load user memory; the floor and"
        " langgraph dev take it, agentctl takes the user from auth only (default: no user)",
    )
    args = parser.parse_args()
    unknown = set(args.targets.split(",")) - {"floor", "ours", "ours-bare", "langgraph", ""}
    if unknown:
        parser.error(f"unknown targets: {', '.join(sorted(unknown))}")
    if args.latency_runs < 2 or args.runs < 1:
        parser.error("--latency-runs must be ≥ 2 and --runs ≥ 1")
    if not 1 <= args.turns <= args.latency_runs:
        parser.error("--turns must be between 1 and --latency-runs")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
