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
`bench/runtime_floor.py`'s `measure` on the same agent in this process (InMemorySaver).
The scripted model and the MCP servers run in a helper subprocess shared by all three, so
neither server competes with them for this process's GIL.

Each run is a one-turn streamed run, `client.runs.stream(thread, assistant, input=...,
stream_mode="values")`, on a fresh thread. Thread creation is EXCLUDED from every figure: the
sequential phase creates each thread just before its (timed) run, and the concurrent phase
creates all its threads before the clock starts. Per server:

0. one run that echoes the system prompt (the scripted model's `@say {system}`): a warning is
   printed when a server's prompt differs from the floor's, i.e. when it does other work;
1. warm-up (20 sequential runs, then `--concurrency` concurrent ones), then RSS "before";
2. `--latency-runs` sequential runs: latency p50/p95 (request sent → stream closed), time to
   first event (the `metadata` event) and to the first `values` event;
3. the rest of `--runs` at `--concurrency` concurrent streams: throughput (runs/s);
4. RSS "after" (VmRSS of the process that listens on the server's port), growth per 1000 runs.

It prints one table with the three columns, the ratios ours/floor and ours/langgraph dev, and
the targets of DESIGN.md §6: sequential p50 ≤ 1.3× floor, throughput ≥ 0.8× floor and ≥ 2×
langgraph dev, RSS growth < 10 MiB / 1000 runs.

    .venv/bin/pip install -e '.[dev,bench]'      # or: make bench-server
    .venv/bin/python bench/server_vs_langgraph_dev.py [--runs 1000] [--latency-runs 300]
        [--concurrency 16] [--targets floor,ours,langgraph] [--ours-cmd embedded|dev]
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
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
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
    notes: list[str] = field(default_factory=list)

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
    """`_ours`: agentctl's server on the embedded storage, the way tests/server starts it."""
    import uvicorn

    from agentctl.server import create_app
    from agentctl.server.embedded import open_embedded_server
    from agentctl.server.http import uvicorn_config

    async def main() -> None:
        server = await open_embedded_server(load_project(project), "bench", data)
        config = uvicorn_config(create_app(server), host="127.0.0.1", port=port)
        await uvicorn.Server(config).serve()

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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


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

    async def concurrent(self, count: int, concurrency: int, first: int) -> tuple[float, float]:
        """`count` runs, `concurrency` at a time, on threads made beforehand: (runs/s, p50)."""
        threads = [await self.thread() for _ in range(count)]
        gate = asyncio.Semaphore(concurrency)

        async def bounded(i: int) -> Sample:
            async with gate:
                return await self.checked_run(threads[i], first + i)

        started = time.perf_counter()
        samples = await asyncio.gather(*(bounded(i) for i in range(count)))
        elapsed = time.perf_counter() - started
        return count / elapsed, statistics.median(s.latency for s in samples)


async def measure_server(
    url: str,
    pid: int,
    *,
    runs: int,
    latency_runs: int,
    concurrency: int,
    user: str | None,
    before: Callable[[LangGraphClient], Awaitable[None]] | None = None,
    progress: Callable[[str], None] = print,
) -> Figures:
    client = get_client(url=url, api_key=None)
    figures = Figures()
    try:
        if before is not None:
            await before(client)
        harness = Harness(client, await assistant_of(client), user)
        _, figures.system_prompt = await harness.run(await harness.thread(), "@say {system}")
        for i in range(WARMUP):
            await harness.fresh_run(-1 - i)
        await harness.concurrent(concurrency, concurrency, -1000)
        await asyncio.sleep(0.5)
        figures.rss_before_mib = rss_mib(pid)
        progress(f"  {latency_runs} sequential runs")
        cpu_before = cpu_seconds(pid)
        samples = [await harness.fresh_run(i) for i in range(latency_runs)]
        figures.cpu_ms_per_run = (cpu_seconds(pid) - cpu_before) * 1000 / latency_runs
        latencies = [s.latency * 1000 for s in samples]
        figures.p50_ms = statistics.median(latencies)
        figures.p95_ms = p95(latencies)
        figures.first_event_ms = statistics.median(s.first_event * 1000 for s in samples)
        figures.first_values_ms = statistics.median(s.first_values * 1000 for s in samples)
        rest = runs - latency_runs
        if rest > 0:
            progress(f"  {rest} runs, {concurrency} concurrent")
            throughput, loaded = await harness.concurrent(rest, concurrency, latency_runs)
            figures.runs_per_s, figures.loaded_p50_ms = throughput, loaded * 1000
        figures.runs = max(runs, latency_runs)
        await asyncio.sleep(0.5)
        figures.rss_after_mib = rss_mib(pid)
    finally:
        await client.http.client.aclose()
    return figures


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


async def run_floor(setup: Setup) -> Figures:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore
    from runtime_floor import measure

    agent = await load_agent(
        load_project(setup.project), "bench", store=InMemoryStore(), checkpointer=InMemorySaver()
    )
    configurable = {"thread_id": "bench-system"}
    if setup.user:
        configurable[USER_ID_KEY] = setup.user
    graph = agent.graph if setup.user else WithoutUser(agent.graph)
    state = await graph.ainvoke(user_input("@say {system}"), {"configurable": configurable})
    floor = await measure(graph, setup.latency_runs, setup.concurrency)
    return Figures(
        p50_ms=floor["p50_ms"],
        p95_ms=floor["p95_ms"],
        runs_per_s=floor["concurrent_runs_per_s"],
        cpu_ms_per_run=floor["cpu_ms_per_run"],
        system_prompt=str(state["messages"][-1].content),
        notes=[f"sequential throughput {floor['sequential_runs_per_s']:.1f} runs/s"],
    )


async def serve_and_measure(
    label: str,
    command: list[str],
    port: int,
    setup: Setup,
    *,
    env: dict[str, str],
    cwd: Path | None,
    before: Callable[[LangGraphClient], Awaitable[None]] | None = None,
) -> Figures:
    """Start `command` (a server listening on `port`), measure it, stop it; its log's tail
    is in the error when it fails."""
    log = setup.tmp / (label.split(" (")[0].replace(" ", "-") + ".log")
    with child(command, log, env=env, cwd=cwd) as process:
        url = f"http://127.0.0.1:{port}"
        await wait_ready(url, process, log)
        pid = serving_pid(process.pid, port)
        print(f"{label}: {url}, serving pid {pid} (launched pid {process.pid})")
        try:
            return await measure_server(
                url,
                pid,
                runs=setup.runs,
                latency_runs=setup.latency_runs,
                concurrency=setup.concurrency,
                user=setup.user,
                before=before,
            )
        except Exception as exc:
            raise RuntimeError(f"{exc}\n--- {label} log:\n{tail(log)}") from exc


async def run_langgraph_dev(setup: Setup) -> Figures:
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

    return await serve_and_measure(
        "langgraph dev", command, port, setup, env=env, cwd=folder, before=seed
    )


async def run_ours(setup: Setup) -> Figures:
    port = free_port()
    if setup.ours_cmd == "dev":
        agentctl = Path(sys.executable).parent / "agentctl"
        command = [str(agentctl), "dev", "--port", str(port)]
        cwd: Path | None = setup.project
    else:
        data = setup.tmp / "ours-data"
        command = [sys.executable, __file__, "_ours", str(setup.project), str(data), str(port)]
        cwd = None
    return await serve_and_measure(
        f"agentctl ({setup.ours_cmd})", command, port, setup, env=setup.env, cwd=cwd
    )


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
    for note in floor.notes:
        print(f"floor: {note}")


async def main(args: argparse.Namespace) -> None:
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    with tempfile.TemporaryDirectory(prefix="agentctl-bench-") as tmp_name:
        tmp = Path(tmp_name)
        with running_fixtures(tmp) as facts:
            project = write_demo(tmp / "demo", facts["calculator"], facts["library"])
            env = {k: v for k, v in os.environ.items() if k not in NOISY_ENV}
            env.update(QUIET_ENV)
            env.update(facts["env"])
            os.environ.update(facts["env"])
            os.environ.update(QUIET_ENV)
            for name in NOISY_ENV:
                os.environ.pop(name, None)
            setup = Setup(
                tmp=tmp,
                project=project,
                env=env,
                runs=args.runs,
                latency_runs=args.latency_runs,
                concurrency=args.concurrency,
                ours_cmd=args.ours_cmd,
                user=args.user,
            )
            runners = {"floor": run_floor, "langgraph": run_langgraph_dev, "ours": run_ours}
            results: dict[str, Figures] = {}
            for target in targets:
                print(f"measuring {target} …", flush=True)
                started = time.perf_counter()
                try:
                    results[target] = await runners[target](setup)
                except Exception as exc:
                    results[target] = Figures(error=str(exc))
                    print(f"  {target} failed: {exc}")
                print(f"  done in {time.perf_counter() - started:.0f} s", flush=True)
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
    return args


if __name__ == "__main__":
    if sys.argv[1:2] == ["_fixtures"]:
        serve_fixtures()
    elif sys.argv[1:2] == ["_ours"]:
        serve_ours(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    else:
        asyncio.run(main(parse_args()))
