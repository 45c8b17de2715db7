"""Fixtures shared by every tier, and the markers that sort the tests into tiers.

A test is marked by what it needs beyond Python (`postgres`, `redis`, `sandbox`, `node`,
`browser`, `disk`) and `slow` when it takes seconds; `make test-fast` runs the ones marked none of
these. Most markers are applied here from the fixtures a test uses, the parameters it runs
with ("postgres", "redis") and its folder; the few tests that fetch a service dynamically are
marked by hand. A fixture that reaches a service fails a test not marked for it, so the fast
tier can never come to need one unnoticed."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentctl.cli import main
from agentctl.testing import ScriptedModelServer, services
from agentctl.testing.demo import write_demo
from agentctl.testing.identity import IdpAServer, IdpBServer, OidcIssuer
from agentctl.testing.mcp_servers import Ledger, calculator, library, serve
from tests.dev_process import DevProcess, StartDev
from tests.npm import node_executable
from tests.small_disk import SmallDisk

pytest_plugins = ["tests.watchdog"]

# -- tiers --------------------------------------------------------------------------------

# What a fixture needs: a test using it (directly or through another fixture) gets the marker.
FIXTURE_MARKERS = {
    "postgres_admin_url": ("postgres",),
    "database_url": ("postgres",),
    "redis_server_url": ("redis",),
    "redis_prefix": ("redis",),
    "sandbox_dir": ("sandbox",),
    "small_disk": ("disk",),
    "node": ("node",),
    "chromium": ("browser",),
    # Services fetched inside the fixture (tests/storage): replicas' PostgreSQL storage with
    # its Redis event log and bus, the Redis bus, the Redis event log.
    "open_postgres": ("postgres", "redis"),
    "redis_buses": ("redis",),
    "redis_backend": ("redis",),
    # A real agent server per test (tests/server): about a second each.
    "agent": ("slow",),
    "hooked": ("slow",),
    "gated": ("slow",),
    "two_users": ("slow",),
    "limited": ("slow",),
    "backend": ("slow",),
    "target": ("slow",),
    "chat": ("slow",),
    "signed_in": ("slow",),
}
# A backend parameter (the `storage` fixture's "postgres", a bus's "redis"): the PostgreSQL
# backend of the tests always runs with the Redis event log and bus.
PARAM_MARKERS = {"postgres": ("postgres", "redis"), "redis": ("redis",)}
# Folders whose every test needs the same things.
FOLDER_MARKERS = {
    "production": ("postgres", "redis"),
    "sandbox": ("sandbox",),
    "js": ("node",),
    "console": ("browser", "slow"),
}
TESTS = Path(__file__).parent


def tier_markers(item: pytest.Item) -> set[str]:
    """The markers `item` gets from its fixtures, parameters and folder."""
    names: set[str] = set()
    for fixture in getattr(item, "fixturenames", ()):
        names.update(FIXTURE_MARKERS.get(fixture, ()))
    callspec = getattr(item, "callspec", None)
    for value in callspec.params.values() if callspec is not None else ():
        if isinstance(value, str):
            names.update(PARAM_MARKERS.get(value, ()))
    folder = item.path.relative_to(TESTS).parts[0]
    names.update(FOLDER_MARKERS.get(folder, ()))
    return names


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for name in sorted(tier_markers(item)):
            item.add_marker(name)


RUNNING = pytest.StashKey[pytest.Item]()  # the test being set up or run, for session fixtures


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.session.stash[RUNNING] = item


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """A test that failed leaves what its frames held (clients it never reached the end to
    close): let it go, and collect it now, so that an unclosed socket is reported with this
    test. Left for later, it was old by then and met only the next full collection — the
    next in-process server's `settle_heap` — failing an innocent test."""
    if getattr(sys, "last_traceback", None) is None:
        return
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        with contextlib.suppress(AttributeError):
            delattr(sys, name)
    gc.collect()


def require_marker(request: pytest.FixtureRequest, marker: str, service: str) -> None:
    """Fail the running test before it reaches `service` if it lacks `marker`: `make
    test-fast` runs on machines without the service, and must never select such a test."""
    item = request.session.stash[RUNNING]
    if item.get_closest_marker(marker) is None:
        pytest.fail(
            f"{item.nodeid} uses {service} but is not marked `{marker}`: add "
            f"@pytest.mark.{marker} (or a fixture or parameter tests/conftest.py knows)",
            pytrace=False,
        )


async def eventually(
    check: Callable[[], Awaitable[Any]], seconds: float = 10.0, what: str = "the condition"
) -> Any:
    """Wait until the coroutine function `check` returns something true, and return it;
    fail after `seconds`."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not (result := await check()):
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)
    return result


@dataclass
class CliResult:
    exit_code: int
    out: str
    err: str


RunCli = Callable[..., CliResult]
WriteFiles = Callable[..., Path]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> RunCli:
    """Run `agentctl ARGS` in process, in folder `cwd`, and capture what a user would see."""

    def run(
        *args: str,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        input: str = "",
        unset: Iterable[str] = (),
    ) -> CliResult:
        """`input`: what the user types (standard input; empty: end of input at once);
        `unset`: variables the user's shell does not have."""
        monkeypatch.setattr("sys.stdin", io.StringIO(input))
        if cwd is not None:
            monkeypatch.chdir(cwd)
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        for name in unset:
            monkeypatch.delenv(name, raising=False)
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def write_files(tmp_path: Path) -> WriteFiles:
    """Write `{relative path: text}` under a fresh project folder and return the folder."""

    def write(files: dict[str, str], folder: str = "project") -> Path:
        root = tmp_path / folder
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        root.mkdir(parents=True, exist_ok=True)
        return root

    return write


@pytest.fixture(autouse=True)
def _clean_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's real keys."""
    for name in ("OPENAI_API_KEY", "PLATFORM_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


# `agentctl dev` in a subprocess (test_dev.py, tests/console).


@pytest.fixture
def dev_env(model_server: ScriptedModelServer) -> dict[str, str]:
    """The environment of the process: the scripted model; no platform key; output to a
    pipe buffered, as in a user's shell (`agentctl dev | tee log`)."""
    unset = ("PLATFORM_API_KEY", "AGENTCTL_DEBUG", "PYTHONUNBUFFERED")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    return {**env, **model_server.env}


@pytest.fixture
def start_dev(dev_env: dict[str, str], tmp_path: Path) -> Iterator[StartDev]:
    started: list[DevProcess] = []

    def start(*args: str | Path, env: dict[str, str] | None = None) -> DevProcess:
        process = DevProcess([str(a) for a in args], env or dev_env, tmp_path)
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()


@pytest.fixture(scope="session")
def node() -> str:
    """Node.js 20+ with npm (tests/js, the console's build)."""
    return node_executable()


@pytest.fixture(scope="session")
def chromium() -> str:
    """Chromium, for Playwright: $CHROMIUM, else the Debian package's /usr/bin/chromium."""
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).is_file():
        pytest.fail(
            "the browser tests need Chromium: apt-get install chromium (or set CHROMIUM to "
            "a Chromium binary)",
            pytrace=False,
        )
    return path


# The scripted model and two MCP servers, shared by the whole session (tests/server,
# test_dev); test_runtime.py has module-scoped ones of its own.


@pytest.fixture(scope="session")
def model_server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(keep_alive=False) as server:
        yield server


@pytest.fixture(scope="session")
def calc_port() -> Iterator[int]:
    with serve(calculator().streamable_http_app()) as port:
        yield port


@pytest.fixture(scope="session")
def library_port() -> Iterator[int]:
    with serve(library().sse_app()) as port:
        yield port


@pytest.fixture
def demo(tmp_path: Path, calc_port: int, library_port: int) -> Path:
    """The demo project: a skill, a user template, two subagents and MCP servers."""
    return write_demo(
        tmp_path / "demo",
        f"http://127.0.0.1:{calc_port}/mcp",
        f"http://127.0.0.1:{library_port}/sse",
    )


@pytest.fixture
def ledger() -> Iterator[tuple[Ledger, int]]:
    """An MCP server with a visible side effect, and its port."""
    book = Ledger()
    with serve(book.server().streamable_http_app()) as port:
        yield book, port


# The run of the restart tests: a side effect (a ledger entry), then a slow answer.
PAYING_SCRIPT = '@call record {"entry": "paid"}\n@sleep 1.5 @say done'


def chat_project(root: Path, name: str = "chat") -> Path:
    """The smallest project: one agent on the scripted model, no tools of its own."""
    root.mkdir(parents=True)
    (root / "agent.toml").write_text(f'[agent]\nname = "{name}"\nmodel = "openai:scripted"\n')
    (root / "AGENTS.md").write_text("You chat.\n")
    return root


def ledger_project(root: Path, port: int) -> Path:
    """The `payer` project: its agent has the ledger as its only MCP server."""
    root.mkdir()
    (root / "agent.toml").write_text('[agent]\nname = "payer"\nmodel = "openai:scripted"\n')
    (root / "AGENTS.md").write_text("You pay.\n")
    (root / "mcp.json").write_text(
        json.dumps({"mcpServers": {"ledger": {"url": f"http://127.0.0.1:{port}/mcp"}}})
    )
    return root


# -- real loopback identity providers, one per module, reset before each test --------------


@pytest.fixture(scope="module")
def idp_a_server() -> Iterator[IdpAServer]:
    with IdpAServer() as server:
        yield server


@pytest.fixture
def idp_a(idp_a_server: IdpAServer) -> IdpAServer:
    idp_a_server.outage, idp_a_server.delay, idp_a_server.calls = False, 0.0, 0
    return idp_a_server


@pytest.fixture(scope="module")
def idp_b_server() -> Iterator[IdpBServer]:
    with IdpBServer() as server:
        yield server


@pytest.fixture
def idp_b(idp_b_server: IdpBServer) -> IdpBServer:
    idp_b_server.outage, idp_b_server.jwks_fetches = False, 0
    return idp_b_server


@pytest.fixture(scope="module")
def oidc_server() -> Iterator[OidcIssuer]:
    with OidcIssuer(audience="agentctl-tests", path="/realms/demo") as server:
        yield server


@pytest.fixture
def oidc(oidc_server: OidcIssuer) -> OidcIssuer:
    oidc_server.outage, oidc_server.jwks_fetches, oidc_server.discovery_fetches = False, 0, 0
    oidc_server.signing_algs, oidc_server.key_alg = ["RS256"], None
    return oidc_server


# -- PostgreSQL and Redis: the ones DATABASE_URL / REDIS_URL name (or the local defaults), else
# throwaway servers (agentctl.testing.services); each test gets its own database and key prefix.


@pytest.fixture(scope="session")
def _postgres_server() -> str:
    return services.postgres_url()


@pytest.fixture(scope="session")
def _redis_server() -> str:
    return services.redis_url()


# Per test, so that every test reaching a service is checked for its marker, also one that
# asks for it with `request.getfixturevalue` after another test started the service.
@pytest.fixture
def postgres_admin_url(request: pytest.FixtureRequest) -> str:
    require_marker(request, "postgres", "PostgreSQL")
    return str(request.getfixturevalue("_postgres_server"))


@pytest.fixture
def redis_server_url(request: pytest.FixtureRequest) -> str:
    require_marker(request, "redis", "Redis")
    return str(request.getfixturevalue("_redis_server"))


@pytest.fixture
def database_url(request: pytest.FixtureRequest, postgres_admin_url: str) -> Iterator[str]:
    """An empty database of its own, dropped after the test."""
    require_marker(request, "postgres", "PostgreSQL")
    url = services.fresh_database(postgres_admin_url)
    yield url
    services.drop_database(url)


@pytest.fixture
def redis_prefix(request: pytest.FixtureRequest, redis_server_url: str) -> Iterator[str]:
    """A Redis key prefix of its own; its keys are deleted after the test."""
    require_marker(request, "redis", "Redis")
    import redis

    prefix = services.fresh_prefix()
    yield prefix
    client = redis.Redis.from_url(redis_server_url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


# -- a disk that fills up ------------------------------------------------------------------


@pytest.fixture
def small_disk(request: pytest.FixtureRequest) -> Iterator[SmallDisk]:
    """A 4 MiB tmpfs the test mounts over a folder (`mount`), fills and frees; unmounted
    after the test."""
    require_marker(request, "disk", "a tmpfs of its own")
    disk = SmallDisk()
    yield disk
    disk.unmount()


# -- sandboxes ------------------------------------------------------------------------------


@pytest.fixture
def sandbox_dir(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder for the platform sandboxes (AGENTCTL_SANDBOX_DIR) that the unprivileged
    sandbox user can reach, which pytest's own tmp_path (mode 700) is not when run as root."""
    require_marker(request, "sandbox", "the platform sandbox")
    assert shutil.which("bwrap"), "the sandbox tests need bubblewrap: apt-get install bubblewrap"
    folder = Path(tempfile.mkdtemp(prefix="agentctl-sandboxes-"))
    folder.chmod(0o711)
    monkeypatch.setenv("AGENTCTL_SANDBOX_DIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def sandbox_project(root: Path, scope: str = "thread", name: str = "coder") -> Path:
    """The `coder` project (agent `name`): a platform sandbox of `scope` and a skill with a
    script."""
    files = {
        "agent.toml": (
            f'[agent]\nname = "{name}"\nmodel = "openai:scripted"\n\n'
            f'[sandbox]\nprovider = "platform_sandbox"\nscope = "{scope}"\n'
        ),
        "AGENTS.md": "You write and run code.\n",
        "skills/greet/SKILL.md": "---\nname: greet\ndescription: greets\n---\nRun greet.py NAME.\n",
        "skills/greet/greet.py": "import sys\nprint('hello from the greet skill,', sys.argv[1])\n",
        ".env": "PLATFORM_API_KEY=platform-key\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root
