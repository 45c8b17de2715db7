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
`bench/runtime_floor.py`'s `one_run` on the same agent in this process (InMemorySaver).
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
        [--ours-cmd embedded|dev]
        [--user ID]

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
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agentctl.project import load_project
from agentctl.runtime import load_agent
from agentctl.runtime.agent import seed_revision
from agentctl.runtime.memory import USER_ID_KEY
from agentctl.testing import PLAIN_PREFIX
from agentctl.testing.demo import write_demo
from agentctl.testing.services import free_port

BENCH = Path(__file__).resolve().parent
GRAPH_ID = "demo"
WARMUP = 20
START_TIMEOUT = 180.0
MIB = 1024 * 1024
NOISY_ENV = (  # never let a developer's settings send traces or pick another model
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "LANGSMITH_ENDPOINT",
    "LANGCHAIN_ENDPOINT",
    "OPENAI_ORGANIZATION",
    "OPENAI_PROJECT",
)
QUIET_ENV = {
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_OTEL_ENABLED": "false",
    "OTEL_SDK_DISABLED": "true",
    "PYTHONUNBUFFERED": "1",
}

# The graph module `langgraph dev` loads. It is imported in a worker thread of the server, so
# asyncio.run is free to build the agent there. load_agent needs a store to write the
# revision's seeds into, but langgraph dev refuses a graph compiled with a store of its own: the
# graph is built with a throwaway one, then copied without it. langgraph dev hands every run
# its own store and checkpointer, into which the benchmark copies the same seeds over HTTP.
GRAPH_MODULE = '''"""The agentctl demo agent for `langgraph dev` (written by {script})."""

import asyncio
import os
from pathlib import Path

from langgraph.store.memory import InMemoryStore

from agentctl.project import load_project
from agentctl.runtime import load_agent


async def _build():
    project = load_project(Path(os.environ["AGENTCTL_BENCH_PROJECT"]))
    agent = await load_agent(project, "bench", store=InMemoryStore(), checkpointer=None)
    return agent.graph.copy(update={{"store": None}})


graph = asyncio.run(_build())
'''


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


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[94] if len(values) > 1 else values[0]


def user_input(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


# ---------------------------------------------------------------------------------------------
# Helper processes: the fixtures (model + MCP servers), our server


def serve_fixtures() -> None:
    """`_fixtures`: the scripted model and the demo's MCP servers until stdin closes."""
    from agentctl.testing import ScriptedModelServer
    from agentctl.testing.mcp_servers import calculator, library, serve

    with (
        ScriptedModelServer() as model,
        serve(calculator().streamable_http_app()) as calc,
        serve(library().sse_app()) as lib,
    ):
        facts = {
            "env": model.env,
            "calculator": f"http://127.0.0.1:{calc}/mcp",
            "library": f"http://127.0.0.1:{lib}/sse",
        }
        print(json.dumps(facts), flush=True)
        sys.stdin.read()  # the benchmark closes our stdin (or dies) when it is done


def serve_ours(project: Path, data: Path, port: int) -> None:
    """`_ours`: agentctl's server on the embedded storage, as `agentctl dev` serves it
    without the file watcher and the blocking-call checks."""
    from agentctl.server.app import create_app
    from agentctl.server.embedded import open_embedded_server
    from agentctl.server.heap import settle_heap
    from agentctl.server.http import NotifyingUvicorn, uvicorn_config

    async def stopping() -> None:
        pass

    async def main() -> None:
        server = await open_embedded_server(load_project(project), "bench", data)
        config = uvicorn_config(create_app(server), host="127.0.0.1", port=port)
        # As `agentctl dev` does once it serves.
        await NotifyingUvicorn(config, on_started=settle_heap, on_stopping=stopping).serve()

    try:  # what uvicorn's loop="auto" picks, as under `langgraph dev`
        import uvloop
    except ImportError:
        asyncio.run(main())
    else:
        uvloop.run(main())


@contextlib.contextmanager
def running_fixtures(tmp: Path) -> Iterator[dict[str, Any]]:
    """The `_fixtures` helper process (the scripted model, the MCP servers) and what it
    serves: `{"env", "calculator", "library"}`; stopped on exit."""
    log = tmp / "fixtures.log"
    with log.open("wb") as err:
        fixtures = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "_fixtures"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            start_new_session=True,
        )
    try:
        assert fixtures.stdout is not None
        line = fixtures.stdout.readline()
        if not line:
            raise RuntimeError(f"the fixtures process failed:\n{tail(log)}")
        yield json.loads(line)
    finally:
        if fixtures.stdin is not None:
            fixtures.stdin.close()
        stop_group(fixtures)


@contextlib.contextmanager
def child(
    command: list[str], log: Path, *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A subprocess in its own session, logging to `log`; its group is ended on exit."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        try:
            yield process
        finally:
            stop_group(process)


def stop_group(process: subprocess.Popen[Any]) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def tail(log: Path, lines: int = 30) -> str:
    text = log.read_text(errors="replace") if log.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


# ---------------------------------------------------------------------------------------------
# /proc: which process serves a port, and its RSS


def listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as rows:
            next(rows)
            for row in rows:
                parts = row.split()
                local, state, inode = parts[1], parts[3], parts[9]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                    inodes.add(inode)
    return inodes


def descendants(pid: int) -> list[int]:
    found, todo = [pid], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            with contextlib.suppress(OSError):
                kids = [int(kid) for kid in (task / "children").read_text().split()]
                found += kids
                todo += kids
    return found


def serving_pid(root: int, port: int) -> int:
    """The process among `root` and its descendants that holds the listening socket."""
    sockets = {f"socket:[{inode}]" for inode in listening_inodes(port)}
    for pid in descendants(root):
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            with contextlib.suppress(OSError):
                if os.readlink(fd) in sockets:
                    return pid
    raise RuntimeError(f"no process under pid {root} listens on port {port}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


# ---------------------------------------------------------------------------------------------
# The harness: works against any LangGraph-API URL


@dataclass
class Sample:
    latency: float
    first_event: float
    first_values: float


async def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    async with httpx.AsyncClient(timeout=2) as http:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited ({process.returncode}):\n{tail(log)}")
            for path in ("/ok", "/info"):
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(url + path)).status_code == 200:
                        return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"the server did not answer within {START_TIMEOUT:.0f} s:\n{tail(log)}")


async def assistant_of(client: LangGraphClient) -> str:
    """The assistant of the demo graph (langgraph dev also takes the graph id itself)."""
    with contextlib.suppress(Exception):
        for assistant in await client.assistants.search(graph_id=GRAPH_ID, limit=10):
            return str(assistant["assistant_id"])
    return GRAPH_ID


class Harness:
    def __init__(self, client: LangGraphClient, assistant: str, user: str | None) -> None:
        self.client = client
        self.assistant = assistant
        self.config = {"configurable": {USER_ID_KEY: user}} if user else None

    async def thread(self) -> str:
        return str((await self.client.threads.create())["thread_id"])

    async def run(self, thread_id: str, text: str) -> tuple[Sample, str]:
        """One streamed run; the sample and the text of the last message."""
        started = time.perf_counter()
        first_event = first_values = 0.0
        last: Any = None
        async for part in self.client.runs.stream(
            thread_id,
            self.assistant,
            input=user_input(text),
            stream_mode="values",
            config=self.config,  # type: ignore[arg-type]
        ):
            now = time.perf_counter() - started
            first_event = first_event or now
            if part.event == "error":
                raise RuntimeError(f"the run failed: {part.data}")
            if part.event == "values":
                first_values = first_values or now
                last = part.data
        latency = time.perf_counter() - started
        if not isinstance(last, dict) or not last.get("messages"):
            raise RuntimeError(f"the run streamed no messages (last values: {last!r})")
        content = last["messages"][-1].get("content")
        return Sample(latency, first_event, first_values), str(content)

    async def checked_run(self, thread_id: str, index: int) -> Sample:
        sample, text = await self.run(thread_id, f"hello {index}")
        if text != f"{PLAIN_PREFIX}hello {index}":
            raise RuntimeError(f"unexpected answer {text!r} to run {index}")
        return sample

    async def fresh_run(self, index: int) -> Sample:
        return await self.checked_run(await self.thread(), index)


# ---------------------------------------------------------------------------------------------
# Targets, measured in turns


class Target:
    """What the interleaved measurement drives: one run at a time, on what `prepare` made."""

    label: str

    async def prepare(self, count: int) -> list[Any]:
        """What `count` runs need beforehand (servers: a fresh thread each; not timed)."""
        return [None] * count

    async def run(self, prepared: Any, index: int) -> Sample:
        raise NotImplementedError

    def cpu(self) -> float:
        """CPU seconds its process used so far."""
        raise NotImplementedError


class FloorTarget(Target):
    """The graph in this process: `runtime_floor.one_run` (InMemorySaver, InMemoryStore)."""

    label = "floor"

    def __init__(self, graph: Any) -> None:
        self.graph = graph

    async def run(self, prepared: Any, index: int) -> Sample:
        from runtime_floor import one_run

        latency = await one_run(self.graph, index)
        return Sample(latency, 0.0, 0.0)

    def cpu(self) -> float:
        return time.process_time()


class ServerTarget(Target):
    """A server driven by the official SDK through `Harness`."""

    def __init__(self, label: str, harness: Harness, pid: int) -> None:
        self.label = label
        self.harness = harness
        self.pid = pid

    async def prepare(self, count: int) -> list[Any]:
        return [await self.harness.thread() for _ in range(count)]

    async def run(self, prepared: Any, index: int) -> Sample:
        return await self.harness.checked_run(prepared, index)

    def cpu(self) -> float:
        return cpu_seconds(self.pid)


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


@dataclass
class Setup:
    tmp: Path
    project: Path
    env: dict[str, str]  # environment of the servers: the model's, tracing off
    runs: int
    latency_runs: int
    concurrency: int
    turns: int
    ours_cmd: str
    user: str | None


async def seeds(project: Path) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    """The store items `load_agent` seeds for the demo revision."""
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore()
    await seed_revision(load_project(project), store)
    items = await store.asearch((), limit=10_000)
    return [(item.namespace, item.key, item.value) for item in items]


class WithoutUser:
    """The graph, run without the user `runtime_floor.one_run` puts in every config."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph

    async def ainvoke(self, input: Any, config: dict[str, Any]) -> Any:
        configurable = {k: v for k, v in config["configurable"].items() if k != USER_ID_KEY}
        return await self.graph.ainvoke(input, {**config, "configurable": configurable})


@dataclass
class Started:
    """A target ready to measure, with what the report needs of it beyond the figures."""

    target: Target
    system_prompt: str
    pid: int | None = None  # a server's: its RSS is read


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


async def start_server(
    label: str,
    command: list[str],
    port: int,
    setup: Setup,
    stack: contextlib.AsyncExitStack,
    *,
    env: dict[str, str],
    cwd: Path | None,
    before: Callable[[LangGraphClient], Awaitable[None]] | None = None,
) -> Started:
    """Start `command` (a server listening on `port`) until `stack` closes; a failure's
    error ends with the tail of its log."""
    log = setup.tmp / (label.split(" (")[0].replace(" ", "-") + ".log")
    process = stack.enter_context(child(command, log, env=env, cwd=cwd))
    url = f"http://127.0.0.1:{port}"
    try:
        await wait_ready(url, process, log)
        pid = serving_pid(process.pid, port)
        print(f"{label}: {url}, serving pid {pid} (launched pid {process.pid})")
        client = get_client(url=url, api_key=None)
        stack.push_async_callback(client.http.client.aclose)
        if before is not None:
            await before(client)
        harness = Harness(client, await assistant_of(client), setup.user)
        _, prompt = await harness.run(await harness.thread(), "@say {system}")
    except Exception as exc:
        raise RuntimeError(f"{exc}\n--- {label} log:\n{tail(log)}") from exc
    return Started(ServerTarget(label, harness, pid), prompt, pid)


async def start_langgraph_dev(setup: Setup, stack: contextlib.AsyncExitStack) -> Started:
    folder = setup.tmp / "langgraph"
    folder.mkdir()
    (folder / "bench_graph.py").write_text(
        GRAPH_MODULE.format(script="bench/" + Path(__file__).name)
    )
    config = {"dependencies": ["."], "graphs": {GRAPH_ID: "./bench_graph.py:graph"}}
    (folder / "langgraph.json").write_text(json.dumps(config, indent=2))
    langgraph = Path(sys.executable).parent / "langgraph"
    if not langgraph.exists():
        raise RuntimeError(f"{langgraph} is missing: pip install -e '.[bench]'")
    port = free_port()
    command = [
        str(langgraph),
        "dev",
        "--port",
        str(port),
        "--no-browser",
        "--no-reload",
        "--n-jobs-per-worker",
        str(setup.concurrency),
        "--server-log-level",
        "WARNING",
        "--config",
        str(folder / "langgraph.json"),
    ]
    env = {**setup.env, "AGENTCTL_BENCH_PROJECT": str(setup.project)}
    items = await seeds(setup.project)

    async def seed(client: LangGraphClient) -> None:
        for namespace, key, value in items:
            await client.store.put_item(list(namespace), key=key, value=value)

    return await start_server(
        "langgraph dev", command, port, setup, stack, env=env, cwd=folder, before=seed
    )


async def start_ours(setup: Setup, stack: contextlib.AsyncExitStack) -> Started:
    port = free_port()
    if setup.ours_cmd == "dev":
        agentctl = Path(sys.executable).parent / "agentctl"
        command = [str(agentctl), "dev", "--port", str(port)]
        cwd: Path | None = setup.project
    else:
        data = setup.tmp / "ours-data"
        command = [sys.executable, __file__, "_ours", str(setup.project), str(data), str(port)]
        cwd = None
    return await start_server(
        f"agentctl ({setup.ours_cmd})", command, port, setup, stack, env=setup.env, cwd=cwd
    )


STARTERS: dict[str, Callable[[Setup, contextlib.AsyncExitStack], Awaitable[Started]]] = {
    "floor": start_floor,
    "ours": start_ours,
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


def servers_env(facts: dict[str, Any]) -> dict[str, str]:
    """The servers' environment: this one without a developer's tracing or model settings,
    with the scripted model of `facts` (`running_fixtures`); this process takes it too."""
    os.environ.update(facts["env"])
    os.environ.update(QUIET_ENV)
    for name in NOISY_ENV:
        os.environ.pop(name, None)
    return dict(os.environ)


async def main(args: argparse.Namespace) -> None:
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    with tempfile.TemporaryDirectory(prefix="agentctl-bench-") as tmp_name:
        tmp = Path(tmp_name)
        with running_fixtures(tmp) as facts:
            project = write_demo(tmp / "demo", facts["calculator"], facts["library"])
            setup = Setup(
                tmp=tmp,
                project=project,
                env=servers_env(facts),
                runs=args.runs,
                latency_runs=args.latency_runs,
                concurrency=args.concurrency,
                turns=args.turns,
                ours_cmd=args.ours_cmd,
                user=args.user,
            )
            results = await measure_all(setup, targets)
            report(results, setup)


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
        help="comma-separated, any of floor, ours, langgraph (default: all three)",
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
    unknown = set(args.targets.split(",")) - {"floor", "ours", "langgraph", ""}
    if unknown:
        parser.error(f"unknown targets: {', '.join(sorted(unknown))}")
    if args.latency_runs < 2 or args.runs < 1:
        parser.error("--latency-runs must be ≥ 2 and --runs ≥ 1")
    if not 1 <= args.turns <= args.latency_runs:
        parser.error("--turns must be between 1 and --latency-runs")
    return args


if __name__ == "__main__":
    if sys.argv[1:2] == ["_fixtures"]:
        serve_fixtures()
    elif sys.argv[1:2] == ["_ours"]:
        serve_ours(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    else:
        asyncio.run(main(parse_args()))
