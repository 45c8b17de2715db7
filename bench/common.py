"""What the benchmarks share: the scripted model and MCP servers in a helper process, child
processes in sessions of their own, which process serves a port and its CPU and RSS, the
servers' environment, and one run of the agent in this process (the floor).

    python bench/common.py _fixtures    # the helper process `running_fixtures` starts
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[94] if len(values) > 1 else values[0]


def user_input(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


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


def servers_env(facts: dict[str, Any]) -> dict[str, str]:
    """The servers' environment: this one without a developer's tracing or model settings,
    with the scripted model of `facts` (`running_fixtures`); this process takes it too."""
    os.environ.update(facts["env"])
    os.environ.update(QUIET_ENV)
    for name in NOISY_ENV:
        os.environ.pop(name, None)
    return dict(os.environ)


class OtlpSink:
    """A local OTLP/HTTP receiver that takes every span batch and keeps only their count
    and size: what an exporting server pays for, without a backend's own cost."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        sink = self
        self.batches = 0
        self.bytes = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                sink.batches += 1
                sink.bytes += len(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def summary(self) -> str:
        return f"the OTLP receiver took {self.batches} batches, {self.bytes / 2**20:.1f} MiB"


async def one_run(graph: Any, index: int) -> float:
    config = {"configurable": {"thread_id": f"bench-{index}", "graph_auth_user_id": "bench-user"}}
    started = time.perf_counter()
    await graph.ainvoke({"messages": [{"role": "user", "content": f"hello {index}"}]}, config)
    return time.perf_counter() - started


if __name__ == "__main__":
    if sys.argv[1:2] == ["_fixtures"]:
        serve_fixtures()
