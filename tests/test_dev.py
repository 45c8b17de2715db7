"""`agentctl dev` as a user runs it: a process on a free port, the official langgraph-sdk
client, files edited while it serves, and blocking calls on its event loop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage
from langgraph.graph import MessagesState, StateGraph
from langgraph_sdk import get_client

from agentctl.cli.dev import prepare
from agentctl.project import load_project
from agentctl.runtime import AgentRuntime
from agentctl.server.blocking import BlockingCallError, detect_blocking
from agentctl.server.devloop import Build, DevServer
from agentctl.server.http import listen_socket
from agentctl.testing import ScriptedModelServer
from agentctl.testing.services import free_port
from tests.conftest import WriteFiles
from tests.dev_process import READY_TIMEOUT, DevProcess, StartDev

# Each test runs `agentctl dev` (or `make demo`) as a subprocess: seconds each.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[1]


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def answer(result: Any) -> str:
    assert isinstance(result, dict), result
    assert "__error__" not in result, result["__error__"]
    return str(result["messages"][-1]["content"])


# -- the server ------------------------------------------------------------------------


async def test_dev_serves_the_project_and_stops_on_ctrl_c(demo: Path, start_dev: StartDev) -> None:
    port = free_port()
    dev = start_dev("--config", demo / "agent.toml", "--port", port)
    url = dev.ready()
    assert url == f"http://127.0.0.1:{port}"
    assert f"  Docs  {url}/docs" in dev.out
    assert f"  Data  {demo / '.agentctl' / 'data'}" in dev.out
    assert "Validating… " in dev.err
    assert "Bundling… " in dev.err
    assert "PLATFORM_API_KEY" not in dev.err
    revision = re.search(r'Ready: agent "demo", revision (\w{12})', dev.out)
    assert revision is not None
    assert (demo / ".agentctl/build" / revision.group(1) / "revision.tar.gz").is_file()

    async with httpx.AsyncClient(base_url=url) as http:
        assert (await http.get("/ok")).status_code == 200
        assert (await http.get("/docs")).status_code == 200
        # The printed example works as printed.
        example = dev.wait_for(r"^  Try   curl -s (\S+) -H '([^']+)' -d '(.+)'$")
        assert example.group(1) == f"{url}/runs/wait"
        response = await http.post(example.group(1), content=example.group(3),
                                   headers=[tuple(example.group(2).split(": ", 1))])  # fmt: skip
        assert answer(response.json()) == "scripted reply to: hello"

    # Blocking-call detection is on by default; the demo agent (MCP tools over streamable
    # HTTP and SSE, a subagent, memory) runs with it.
    script = "\n".join([
        '@call add {"a": 2, "b": 3}',
        '@call task {"subagent_type": "researcher", "description": '
        + json.dumps('@call lookup {"topic": "x"}\n@say {last_tool_result}') + "}",
        "@say done: {last_tool_result}",
    ])  # fmt: skip
    async with get_client(url=url, api_key=None) as client:
        result = await client.runs.wait(None, "demo", input=user(script))
    assert answer(result) == "done: the library says x is well documented"

    # Streams that never end by themselves (a thread's) end when the server stops, at once.
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        thread = (await http.post("/threads", json={})).json()["thread_id"]
        joined = await http.send(
            http.build_request("GET", f"/threads/{thread}/stream"), stream=True
        )
        events = http.build_request(
            "POST", f"/threads/{thread}/stream/events", json={"channels": ["lifecycle"]}
        )
        protocol = await http.send(events, stream=True)
        assert (joined.status_code, protocol.status_code) == (200, 200)
        began = time.monotonic()
        assert dev.stop(signal.SIGINT) == 0
        assert time.monotonic() - began < 2.5
        await joined.aclose()
        await protocol.aclose()
    assert dev.lines["out"][-1] == "stopped"
    assert "Traceback" not in dev.err
    assert "blocking call" not in dev.err


async def test_max_runs_comes_from_the_option_or_the_environment(
    demo: Path, start_dev: StartDev, dev_env: dict[str, str]
) -> None:
    env = {**dev_env, "AGENTCTL_MAX_RUNS": "5"}
    for args, expected in ((("--max-runs", "3"), 3), ((), 5)):
        dev = start_dev("--config", demo / "agent.toml", "--port", free_port(), *args, env=env)
        async with httpx.AsyncClient(base_url=dev.ready()) as http:
            metrics = (await http.get("/metrics")).text
        assert f"agentctl_max_runs {expected}.0" in metrics.splitlines()
        assert dev.stop(signal.SIGINT) == 0


async def test_threads_and_memory_survive_a_restart(demo: Path, start_dev: StartDev) -> None:
    dev = start_dev("--config", demo / "agent.toml", "--port", free_port())
    async with get_client(url=dev.ready(), api_key=None) as client:
        thread = await client.threads.create(metadata={"kept": True})
        await client.runs.wait(thread["thread_id"], "demo", input=user("@say first answer"))
        await client.store.put_item(["notes"], "n1", {"text": "remember me"})
    assert dev.stop(signal.SIGTERM) == 0
    assert dev.lines["out"][-1] == "stopped"
    assert (demo / ".agentctl/data").is_dir()

    again = start_dev("--config", demo / "agent.toml", "--port", free_port())
    async with get_client(url=again.ready(), api_key=None) as client:
        kept: Any = await client.threads.get(thread["thread_id"])
        state: Any = await client.threads.get_state(thread["thread_id"])
        note = await client.store.get_item(["notes"], "n1")
    assert note["value"] == {"text": "remember me"}
    assert kept["metadata"]["kept"] is True
    assert state["values"]["messages"][-1]["content"] == "first answer"
    assert again.stop() == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_validating_interrupts_the_start(
    demo: Path, start_dev: StartDev, sig: signal.Signals
) -> None:
    dev = start_dev("--config", demo / "agent.toml", "--port", free_port())
    dev.wait_for(r"^Validating… ", "err", timeout=READY_TIMEOUT)
    assert dev.stop(sig) == 130, dev.err
    assert dev.lines["err"][-1] == "interrupted before the server was ready"
    assert "Traceback" not in dev.err
    assert "Ready" not in dev.out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_loading_interrupts_the_start(
    demo: Path, start_dev: StartDev, sig: signal.Signals
) -> None:
    with socket.socket() as silent:  # an MCP server that never answers: loading waits
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        mcp = {"mcpServers": {"calc": {"url": f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"}}}
        (demo / "mcp.json").write_text(json.dumps(mcp))
        dev = start_dev("--config", demo / "agent.toml", "--port", free_port())
        dev.wait_for(r"^Starting… ", "err", timeout=READY_TIMEOUT)
        time.sleep(0.5)
        assert dev.stop(sig) == 130, dev.err
    assert dev.lines["err"][-1] == "interrupted before the server was ready"
    assert "Traceback" not in dev.err
    assert "Ready" not in dev.out


async def test_edits_reload_the_agent(demo: Path, start_dev: StartDev) -> None:
    dev = start_dev("--config", demo / "agent.toml", "--port", free_port())
    url = dev.ready()
    first = re.search(r"revision (\w{12})", dev.out)
    assert first is not None
    async with get_client(url=url, api_key=None) as client:
        (demo / "AGENTS.md").write_text("You are the edited agent.\n")
        reloaded = dev.wait_for(r"^reloaded: revision (\w{12})$")
        assert reloaded.group(1) != first.group(1)
        prompt = answer(await client.runs.wait(None, "demo", input=user("@say {system}")))
        assert prompt.startswith("You are the edited agent.")

        # An invalid project is reported; the last good revision keeps serving.
        seen = len(dev.lines["err"])
        (demo / "agent.toml").write_text('[agent]\nname = "demo"\nmodel = "nosuch:model"\n')
        dev.wait_for(r"^error: agent\.toml: \[agent\]\.model: ", "err", after=seen)
        dev.wait_for(f"still serving revision {reloaded.group(1)}", "err", after=seen)
        prompt = answer(await client.runs.wait(None, "demo", input=user("@say {system}")))
        assert prompt.startswith("You are the edited agent.")

        # Fixed, and renamed: the new name is an assistant too.
        seen = len(dev.lines["out"])
        (demo / "agent.toml").write_text('[agent]\nname = "renamed"\nmodel = "openai:scripted"\n')
        dev.wait_for(r"^reloaded: revision \w{12}$", after=seen)
        result = await client.runs.wait(None, "renamed", input=user("hi"))
        assert answer(result) == "scripted reply to: hi"
    assert dev.stop() == 0
    assert "Traceback" not in dev.err


def edit(dev: DevProcess, path: Path, text: str) -> int:
    """Write `text` to `path` until `dev` reloads (its watcher starts just after the ready
    message, so a write at once may go unseen); the number of stdout lines before."""
    seen = len(dev.lines["out"])
    for _ in range(10):
        path.write_text(text)
        try:
            dev.wait_for(r"^reloaded: revision \w{12}$", after=seen, timeout=3)
        except AssertionError:
            continue
        return seen
    raise AssertionError(f"no reload after editing {path}\n{dev.out}\n{dev.err}")


def test_a_reload_that_changes_auth_says_how_to_call_again(demo: Path, start_dev: StartDev) -> None:
    (demo / ".env").write_text("IDP_B_SECRET_KEY=sk_test_reload\n")
    dev = start_dev("--config", demo / "agent.toml", "--port", free_port())
    url = dev.ready()
    assert "  Auth  none: anyone who can reach the address may call (no user memory)" in dev.out

    # An edit that leaves auth alone prints no Auth line.
    edit(dev, demo / "AGENTS.md", "You are the edited agent.\n")
    # [auth] on: the Auth line and an example that sends a token.
    toml = '[agent]\nname = "demo"\nmodel = "openai:scripted"\n'
    seen = edit(dev, demo / "agent.toml", toml + '\n[auth]\nprovider = "idp_b"\n')
    dev.wait_for(r"^  Auth  idp_b: requests need Authorization: Bearer <token>$", after=seen)
    tried = dev.wait_for(r"^  Try   curl -s (\S+) .*-H 'Authorization: Bearer ", after=seen)
    assert tried.group(1) == f"{url}/runs/wait"
    assert sum(line.startswith("  Auth  ") for line in dev.lines["out"][:seen]) == 1

    # [auth] off again.
    seen = edit(dev, demo / "agent.toml", toml)
    dev.wait_for(r"^  Auth  none: anyone who can reach the address may call", after=seen)
    dev.wait_for(r"^  Try   curl -s \S+ -H 'Content-Type: application/json' -d ", after=seen)
    assert dev.stop() == 0
    assert "Traceback" not in dev.err


# -- errors at startup -----------------------------------------------------------------


def run_dev(*args: str | Path | int, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentctl", "dev", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_a_port_in_use_is_an_error(demo: Path, dev_env: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_dev("--config", demo / "agent.toml", "--port", port, env=dev_env)
    assert result.returncode == 1
    assert (
        f"error: port {port} on 127.0.0.1 is already in use — stop what is using it or "
        "choose another port with --port"
    ) in result.stderr
    assert "Traceback" not in result.stderr


def test_an_invalid_project_is_an_error(write_files: WriteFiles, dev_env: dict[str, str]) -> None:
    root = write_files({"agent.toml": '[agent]\nname = "x"\nmodel = 42\n', "AGENTS.md": "Hi.\n"})
    result = run_dev("--config", root / "agent.toml", "--port", free_port(), env=dev_env)
    assert result.returncode == 1
    assert "error: agent.toml: [agent].model: " in result.stderr
    assert "Traceback" not in result.stderr
    assert not (root / ".agentctl/data").exists()


def test_a_nul_character_in_agent_toml_is_an_error(
    write_files: WriteFiles, dev_env: dict[str, str]
) -> None:
    toml = '[agent]\nname = "x"\nmodel = "openai:scripted"\n[sandbox]\nimage = "a\\u0000b"\n'
    root = write_files({"agent.toml": toml, "AGENTS.md": "Hi.\n"})
    result = run_dev("--config", root / "agent.toml", "--port", free_port(), env=dev_env)
    assert result.returncode == 1
    assert "error: agent.toml: [sandbox].image: holds the NUL character" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_model_key_is_an_error(write_files: WriteFiles, dev_env: dict[str, str]) -> None:
    root = write_files({"agent.toml": '[agent]\nname = "x"\n', "AGENTS.md": "Hi.\n"})
    env = {k: v for k, v in dev_env.items() if k != "OPENAI_API_KEY"}
    result = run_dev("--config", root / "agent.toml", env=env)
    assert result.returncode == 1
    assert "error: missing environment variables: OPENAI_API_KEY (for model" in result.stderr
    assert "PLATFORM_API_KEY" not in result.stderr


# -- blocking calls --------------------------------------------------------------------


async def test_a_blocking_call_on_the_loop_is_reported() -> None:
    loop = asyncio.get_running_loop()
    exempt = sqlite3.connect(":memory:")
    other = sqlite3.connect(":memory:")
    with detect_blocking(loop, exempt_connections=[exempt]):
        with pytest.raises(BlockingCallError) as info:
            time.sleep(0.001)
        message = str(info.value)
        assert message.startswith("blocking call to time.sleep in ")
        assert "test_dev.py" in message
        assert "--allow-blocking" in message
        await asyncio.to_thread(time.sleep, 0.001)  # off the loop: allowed
        assert exempt.execute("SELECT 1").fetchone() == (1,)  # the server's own database
        with pytest.raises(BlockingCallError, match=r"sqlite3\.Connection\.execute"):
            other.execute("SELECT 1")
    time.sleep(0.001)  # detection is off again
    exempt.close()
    other.close()


class _Events:
    def __init__(self) -> None:
        self.started = asyncio.Event()

    def ready(self, dev: DevServer) -> None:
        self.started.set()

    def reloaded(self, dev: DevServer, previous: Build) -> None:
        pass

    def reload_failed(self, error: Exception, serving: Build) -> None:
        raise AssertionError(error)


@asynccontextmanager
async def dev_server(root: Path, *, allow_blocking: bool = False) -> AsyncIterator[DevServer]:
    """The server of `agentctl dev`, in this event loop, on a free port; it reloads when
    told to (`dev.reload()`), not on its own."""
    environ = dict(os.environ)

    def rebuild() -> Build:
        return prepare(root / "agent.toml", environ, quiet=True)

    build = await asyncio.to_thread(rebuild)
    sock = listen_socket("127.0.0.1", 0)
    events = _Events()
    dev = DevServer(
        build, rebuild, sock=sock, events=events, allow_blocking=allow_blocking, watch=False
    )
    task = asyncio.create_task(dev.run())
    started = asyncio.create_task(events.started.wait())
    await asyncio.wait([task, started], return_when=asyncio.FIRST_COMPLETED)
    try:
        if task.done():
            task.result()
        yield dev
    finally:
        started.cancel()
        dev.stop()
        await task
        sock.close()


def sleepy_runtime(dev: DevServer) -> AgentRuntime:
    """An agent whose one async step calls `time.sleep`, as a library doing blocking I/O
    would."""

    async def step(state: MessagesState) -> dict[str, Any]:
        time.sleep(0.01)
        return {"messages": [AIMessage("slept")]}

    graph = StateGraph(MessagesState)
    graph.add_node("step", step)
    graph.set_entry_point("step")
    assert dev.server is not None
    compiled = graph.compile(checkpointer=dev.server.storage.checkpointer)
    return AgentRuntime(dev.build.project, "sleepy", compiled)


@pytest.mark.usefixtures("_scripted_env")
async def test_a_run_that_blocks_the_loop_fails_naming_the_call(demo: Path) -> None:
    async with (
        dev_server(demo, allow_blocking=False) as dev,
        get_client(url=dev.url, api_key=None) as client,
    ):
        # The demo agent runs with detection on.
        result = await client.runs.wait(None, "demo", input=user("hi"))
        assert answer(result) == "scripted reply to: hi"
        assert dev.server is not None
        dev.server.deployment.swap(sleepy_runtime(dev))
        result = await client.runs.wait(None, "demo", input=user("hi"), raise_error=False)
    assert isinstance(result, dict)
    error = result["__error__"]
    assert error["error"] == "BlockingCallError"
    assert error["message"].startswith("blocking call to time.sleep in ")
    assert "test_dev.py" in error["message"]
    assert "agentctl dev --allow-blocking" in error["message"]


@pytest.mark.usefixtures("_scripted_env")
async def test_allow_blocking_lets_the_run_block(demo: Path) -> None:
    async with (
        dev_server(demo, allow_blocking=True) as dev,
        get_client(url=dev.url, api_key=None) as client,
    ):
        assert dev.server is not None
        dev.server.deployment.swap(sleepy_runtime(dev))
        assert answer(await client.runs.wait(None, "demo", input=user("hi"))) == "slept"


async def test_a_key_changed_in_dotenv_takes_effect_on_reload(
    demo: Path, model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model key comes from `.env` (the shell sets none) and goes to the model client,
    never into the process environment."""
    monkeypatch.setenv("OPENAI_BASE_URL", model_server.base_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    await asyncio.to_thread((demo / ".env").write_text, "OPENAI_API_KEY=sk-dotenv-one\n")
    saved = dict(os.environ)
    async with dev_server(demo) as dev, get_client(url=dev.url, api_key=None) as client:
        await client.runs.wait(None, "demo", input=user("hi"))
        assert model_server.keys[-1] == "sk-dotenv-one"
        await asyncio.to_thread((demo / ".env").write_text, "OPENAI_API_KEY=sk-dotenv-two\n")
        assert await dev.reload()
        await client.runs.wait(None, "demo", input=user("hi"))
        assert model_server.keys[-1] == "sk-dotenv-two"
        assert not await dev.reload()  # nothing changed
        assert dict(os.environ) == saved


@pytest.fixture
def _scripted_env(model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in model_server.env.items():
        monkeypatch.setenv(name, value)


# -- make demo -------------------------------------------------------------------------


def run_demo(demo: Path, dev_env: dict[str, str], **extra: str) -> str:
    """scripts/demo.sh with DEMO_ONCE=1 on `demo`, as `DEMO_ONCE=1 make demo` runs it; its
    output (it must succeed)."""
    env = {k: v for k, v in dev_env.items() if not k.startswith("OPENAI_")}
    env.update(DEMO_DIR=str(demo), DEMO_ONCE="1", PORT="0", **extra)
    try:
        result = subprocess.run(
            ["bash", str(ROOT / "scripts/demo.sh")],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        printed = b"".join(
            part.encode() if isinstance(part, str) else part or b""
            for part in (exc.output, exc.stderr)
        )
        pytest.fail(f"the demo did not end within {exc.timeout} s:\n{printed.decode()}")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output
    assert "stopped" in output
    return output


DEMO_ANSWER = (
    "< Done: the researcher answered, /notes.md is saved, and I will keep my answers short."
)


def test_make_demo_shows_a_subagent_a_gate_and_memory(
    tmp_path: Path, dev_env: dict[str, str]
) -> None:
    output = run_demo(tmp_path / "demo", dev_env)
    assert 'Ready: agent "demo"' in output
    assert "Auth  idp_b: requests need Authorization: Bearer <token>" in output
    # The run pauses at the gate on write_file; the script approves and the run goes on.
    assert "< paused at the approval gate: write_file " in output
    assert "(allowed: approve, edit, reject)" in output
    assert (
        "  task: subagent researcher -> Deep agents plan their work, delegate to subagents and "
        "keep files and memory."
    ) in output
    assert "  write_file: /notes.md -> Updated file /notes.md" in output
    assert "  edit_file: /memories/user/AGENTS.md (memory) -> Successfully replaced" in output
    assert DEMO_ANSWER in output
    memory = output.split("/memories/user/AGENTS.md), as the console shows it:\n")[1]
    assert memory.startswith("    # About the user\n")
    assert "    ## Preferences\n    - Likes short answers.\n\nUser tokens" in memory
    # The console's sign-in: a token for each of two users.
    assert re.search(r"^  alice  eyJ\S+$", output, re.M)
    assert re.search(r"^  bob    eyJ\S+$", output, re.M)
    project = load_project(tmp_path / "demo", environ={"OPENAI_API_KEY": "x"})
    assert project.auth is not None
    assert project.auth.provider == "idp_b"
    assert list(project.interrupt_on) == ["write_file"]
    assert [sub.name for sub in project.subagents] == ["researcher"]
    assert project.user_template is not None
    assert [skill.name for skill in project.skills] == ["review"]


def test_make_demo_keeps_the_project_and_its_data(tmp_path: Path, dev_env: dict[str, str]) -> None:
    demo = tmp_path / "demo"
    run_demo(demo, dev_env)
    edited = (demo / "AGENTS.md").read_text() + "\nAnswer in one sentence.\n"
    (demo / "AGENTS.md").write_text(edited)
    again = run_demo(demo, dev_env)
    assert "== Reusing " in again
    assert (demo / "AGENTS.md").read_text() == edited
    assert DEMO_ANSWER in again
    # alice's memory of the first run is still there: the data was kept too.
    assert again.count("    - Likes short answers.") == 2
    reset = run_demo(demo, dev_env, DEMO_RESET="1")
    assert "== Deleting " in reset
    assert "Answer in one sentence." not in (demo / "AGENTS.md").read_text()
    assert reset.count("    - Likes short answers.") == 1


def descendants(pid: int) -> set[int]:
    """The processes under `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def answers(url: str) -> bool:
    try:
        httpx.get(url, timeout=2)
    except httpx.TransportError:
        return False
    return True


@pytest.mark.parametrize(
    ("command", "sig"),
    [
        pytest.param("demo.sh", signal.SIGTERM, id="demo.sh-SIGTERM"),
        pytest.param("demo.sh", signal.SIGINT, id="demo.sh-SIGINT"),
        pytest.param("demo.sh", signal.SIGHUP, id="demo.sh-SIGHUP"),
        pytest.param("make demo", signal.SIGTERM, id="make-demo-SIGTERM"),
        pytest.param("parent", signal.SIGKILL, id="parent-SIGKILL"),
    ],
)
def test_stopping_make_demo_stops_its_servers(
    tmp_path: Path, dev_env: dict[str, str], command: str, sig: signal.Signals
) -> None:
    if sig != signal.SIGKILL and signal.getsignal(sig) == signal.SIG_IGN:
        # A shell cannot trap a signal ignored when it started (SIGINT in a background job,
        # SIGHUP under nohup).
        pytest.skip(f"{sig.name} is ignored here, so in the script too")
    venv = Path(sys.executable).parent
    env = {k: v for k, v in dev_env.items() if not k.startswith("OPENAI_")}
    env.update(DEMO_DIR=str(tmp_path / "demo"), PORT="0", BIN=str(venv))
    env.pop("DEMO_ONCE", None)
    script = ["bash", str(ROOT / "scripts/demo.sh")]
    args = {
        "demo.sh": script,
        # The installed environment is this one: make only runs the demo.
        "make demo": [
            "make",
            "-s",
            "-o",
            f"{venv.parent}/.installed",
            "demo",
            f"VENV={venv.parent}",
        ],
        # Whatever started the script is killed outright: the script notices and stops.
        "parent": ["bash", "-c", f"{' '.join(script)} & wait"],
    }[command]
    if args[0] == "make" and shutil.which("make") is None:
        pytest.skip("make is not installed")
    log = tmp_path / "demo.log"
    with log.open("w") as out:
        top = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not (serving := re.search(r"keeps serving on (http://\S+):", log.read_text())):
            assert top.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        output = log.read_text()
        assert DEMO_ANSWER in output
        model = re.search(r"OPENAI_BASE_URL=(http://\S+)", output)
        assert model is not None
        urls = [f"{serving.group(1)}/ok", f"{model.group(1)}/models"]
        assert all(answers(url) for url in urls)
        children = descendants(top.pid)
        assert len(children) >= 3, children  # the model, the dev server, tee (make: the script)

        top.send_signal(sig)
        try:
            top.wait(30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the demo did not stop within 30 s:\n{log.read_text()}")
        deadline = time.monotonic() + 30
        while left := [pid for pid in children if alive(pid)]:
            assert time.monotonic() < deadline, f"still running: {left}\n{log.read_text()}"
            time.sleep(0.2)
        assert not any(answers(url) for url in urls)
        output = log.read_text()
        assert "stopped" in output.splitlines()
        assert "Traceback" not in output
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(top.pid, signal.SIGKILL)
        top.wait()


# -- a model provider's failures -------------------------------------------------------

MODEL_KEY = "sk-test-9f2c4e7a1b-must-never-leak"


def failing_project(write_files: WriteFiles, base_url: str) -> Path:
    """A project whose model's endpoint and key come from its `.env` (edited to move it)."""
    return write_files({
        "agent.toml": '[agent]\nname = "x"\nmodel = "openai:scripted"\n',
        "AGENTS.md": "Hi.\n",
        ".env": f"OPENAI_BASE_URL={base_url}\nOPENAI_API_KEY={MODEL_KEY}\n",
    })  # fmt: skip


async def error_of(url: str, script: str) -> dict[str, Any]:
    """The `error` event of a run asked `script`."""
    async with get_client(url=url, api_key=None) as client:
        parts = [p async for p in client.runs.stream(None, "x", input=user(script))]
    errors = [p.data for p in parts if p.event == "error"]
    assert len(errors) == 1, parts
    data: dict[str, Any] = errors[0]
    return data


async def test_a_model_providers_failure_is_one_line_naming_url_and_fix(
    write_files: WriteFiles, start_dev: StartDev, dev_env: dict[str, str]
) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"
    env = {k: v for k, v in dev_env.items() if not k.startswith("OPENAI_")}
    scripted = dev_env["OPENAI_BASE_URL"]
    root = failing_project(write_files, scripted)
    dev = start_dev("--config", root / "agent.toml", "--port", free_port(), env=env)
    url = dev.ready()
    calls = f"{scripted}/chat/completions"

    server_error = await error_of(url, "@fail 500 the provider broke")
    refused_key = await error_of(url, f"@fail 401 Incorrect API key provided: {MODEL_KEY}")
    edit(dev, root / ".env", f"OPENAI_BASE_URL={closed}\nOPENAI_API_KEY={MODEL_KEY}\n")
    unreachable = await error_of(url, "hi")
    assert dev.stop() == 0

    said = {
        "500": f"the openai model provider at {calls} answered 500: the provider broke — the "
        "provider's own failure: retry later (or set OPENAI_BASE_URL to another endpoint)",
        "401": f"the openai model provider at {calls} answered 401: Incorrect API key "
        "provided: *** — check OPENAI_API_KEY: the key is wrong, expired or lacks access",
        "refused": f"could not reach the openai model provider at {closed}/chat/completions "
        "(connection refused) — check OPENAI_BASE_URL and that this machine can reach it",
    }
    for event, case in ((server_error, "500"), (refused_key, "401"), (unreachable, "refused")):
        assert event == {"error": "ModelProviderError", "message": said[case]}
    logged = [line for line in dev.lines["err"] if " failed: " in line]
    assert [line.split(" failed: ", 1)[1] for line in logged] == list(said.values())
    assert all(line.startswith("WARNING agentctl.engine: run ") for line in logged)
    assert "Traceback" not in dev.err
    assert MODEL_KEY not in dev.err


async def test_the_debug_log_level_shows_a_model_failures_traceback(
    write_files: WriteFiles, start_dev: StartDev, dev_env: dict[str, str]
) -> None:
    env = {k: v for k, v in dev_env.items() if not k.startswith("OPENAI_")}
    root = failing_project(write_files, dev_env["OPENAI_BASE_URL"])
    debug = {**env, "AGENTCTL_LOG_LEVEL": "debug"}
    dev = start_dev("--config", root / "agent.toml", "--port", free_port(), env=debug)
    url = dev.ready()
    event = await error_of(url, "@fail 503 overloaded")
    assert dev.stop() == 0
    assert event["error"] == "ModelProviderError"
    assert "answered 503: overloaded" in dev.err
    assert "Traceback" in dev.err
    assert "openai.InternalServerError" in dev.err
    assert MODEL_KEY not in dev.err
