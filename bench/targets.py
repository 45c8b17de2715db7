"""The servers the benchmarks drive, and the harness that drives them: agentctl's server (in a
launcher of this module, or `agentctl dev`) and `langgraph dev` on the demo agent, each
measured through the official `langgraph-sdk` client one streamed run at a time.

    python bench/targets.py _ours PROJECT DATA PORT    # the launcher `start_ours` runs
"""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from common import (
    OtlpSink,
    child,
    cpu_seconds,
    running_fixtures,
    servers_env,
    serving_pid,
    tail,
    user_input,
)
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agentctl.project import load_project
from agentctl.runtime.agent import seed_revision
from agentctl.runtime.memory import USER_ID_KEY
from agentctl.testing import PLAIN_PREFIX
from agentctl.testing.demo import write_demo
from agentctl.testing.services import free_port

START_TIMEOUT = 180.0

GRAPH_ID = "demo"

# Where the `_ours` launcher writes a cProfile of its main thread when it stops (`--profile`).
PROFILE_ENV = "AGENTCTL_BENCH_PROFILE"


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


def serve_ours(project: Path, data: Path, port: int) -> None:
    """`_ours`: agentctl's server on the embedded storage, as `agentctl dev` serves it
    without the file watcher and the blocking-call checks."""
    from agentctl.observability.tracing import configure_tracing, flush_tracing
    from agentctl.server.app import create_app
    from agentctl.server.embedded import open_embedded_server
    from agentctl.server.heap import settle_heap
    from agentctl.server.http import NotifyingUvicorn, uvicorn_config

    profile_path = os.environ.get(PROFILE_ENV)
    profiler = cProfile.Profile() if profile_path else None

    async def stopping() -> None:  # uvicorn ends the process with the signal once stopped
        await asyncio.to_thread(flush_tracing)  # the spans not yet exported
        if profiler is not None and profile_path:
            profiler.disable()
            profiler.dump_stats(profile_path)

    async def main() -> None:
        server = await open_embedded_server(load_project(project), "bench", data)
        config = uvicorn_config(create_app(server), host="127.0.0.1", port=port)
        # As `agentctl dev` does once it serves.
        await NotifyingUvicorn(config, on_started=settle_heap, on_stopping=stopping).serve()

    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if endpoint:  # as `agentctl dev` does when it is set
        configure_tracing(endpoint, "agentctl-bench")

    if profiler is not None:
        profiler.enable()
    try:  # what uvicorn's loop="auto" picks, as under `langgraph dev`
        import uvloop
    except ImportError:
        asyncio.run(main())
    else:
        uvloop.run(main())


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
    ours_env: dict[str, str] = field(default_factory=dict)  # agentctl's alone (tracing)
    before: Path | None = None  # another checkout's src, run by the `*-before` targets
    profile: Path | None = None  # where the `_ours` launcher writes its profile (`--profile`)


@contextlib.contextmanager
def bench_setup(tmp: Path, **fields: Any) -> Iterator[tuple[Setup, dict[str, Any]]]:
    """The scripted model and the demo's MCP servers running (their `facts`), the demo project
    written in `tmp`, and the `Setup` of the servers measured against them: `fields` are its
    other fields (`env`: variables added to the servers' environment)."""
    with running_fixtures(tmp) as facts:
        project = write_demo(tmp / "demo", facts["calculator"], facts["library"])
        env = {**servers_env(facts), **fields.pop("env", {})}
        yield Setup(tmp=tmp, project=project, env=env, **fields), facts


def export_traces(
    setup: Setup, exits: contextlib.ExitStack | contextlib.AsyncExitStack
) -> OtlpSink:
    """A local OTLP receiver (closed with `exits`) that agentctl's servers of `setup` export
    their traces to."""
    sink = OtlpSink()
    exits.callback(sink.close)
    setup.ours_env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": sink.url,
        "OTEL_SDK_DISABLED": "false",  # the servers' quiet default
    }
    return sink


async def seeds(project: Path) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    """The store items `load_agent` seeds for the demo revision."""
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore()
    await seed_revision(load_project(project), store)
    items = await store.asearch((), limit=10_000)
    return [(item.namespace, item.key, item.value) for item in items]


@dataclass
class Started:
    """A target ready to measure, with what the report needs of it beyond the figures."""

    target: Target
    system_prompt: str
    pid: int | None = None  # a server's: its RSS is read


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
    log = setup.tmp / (re.sub(r"[^\w]+", "-", label).strip("-") + ".log")
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


async def start_ours(
    setup: Setup,
    stack: contextlib.AsyncExitStack,
    *,
    bare: bool = False,
    source: Path | None = None,
) -> Started:
    """agentctl's server; `bare`: with metering off and no tracing (`setup.ours_env` not
    applied), to measure what they cost; `source`: agentctl's `src` directory to run instead
    of the installed one (another checkout's, to measure a change beside what it changes)."""
    port = free_port()
    name = "ours-bare" if bare else "ours-before" if source is not None else "ours"
    if setup.ours_cmd == "dev":
        agentctl = Path(sys.executable).parent / "agentctl"
        command = [str(agentctl), "dev", "--port", str(port)]
        cwd: Path | None = setup.project
        if bare or source is not None:  # its own data: dev keeps it in the project
            cwd = setup.tmp / name
            shutil.copytree(setup.project, cwd, dirs_exist_ok=True)
    else:
        data = setup.tmp / f"{name}-data"
        command = [sys.executable, __file__, "_ours", str(setup.project), str(data), str(port)]
        cwd = None
    if bare:
        env = {k: v for k, v in setup.env.items() if not k.startswith("OTEL_")}
        env["AGENTCTL_METERING"] = "false"
    else:
        env = {**setup.env, **setup.ours_env}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    if setup.profile is not None:
        env[PROFILE_ENV] = str(setup.profile / f"{name}.prof")
    label = f"agentctl ({setup.ours_cmd}{', bare' if bare else ''})"
    return await start_server(label, command, port, setup, stack, env=env, cwd=cwd)


async def start_ours_bare(setup: Setup, stack: contextlib.AsyncExitStack) -> Started:
    return await start_ours(setup, stack, bare=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["_ours"]:
        serve_ours(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
