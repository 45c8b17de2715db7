"""`agentctl dev [--config PATH] [--port 2024] [--host 127.0.0.1] [--cors-origin ORIGIN]...
[--allow-blocking] [--max-runs N] [--open]`."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import sys
import threading
import webbrowser
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

import click

from agentctl.bundle.build import BUILD_DIR, check_env, store_revision
from agentctl.bundle.limits import RevisionLimits
from agentctl.bundle.requirements import install_command, requirements_of
from agentctl.bundle.revision import build_revision
from agentctl.cli.deploy import BEARER, example_call, step, warn
from agentctl.cli.target import config_option
from agentctl.errors import EXIT_INTERRUPTED, AgentctlError, ConfigError
from agentctl.project import load_project

if TYPE_CHECKING:
    from agentctl.server.devloop import Build, DevServer


@click.command()
@config_option
@click.option("--port", default=2024, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port).")  # fmt: skip
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    metavar="ORIGIN",
    callback=lambda ctx, param, values: _origins(values),
    help="Also let web pages of ORIGIN (https://chat.example.com) call the server from a "
    "browser; repeatable. Pages on this machine and LangGraph Studio always may.",
)
@click.option(
    "--allow-blocking",
    is_flag=True,
    help="Allow blocking calls on the server's event loop instead of failing the run.",
)
@click.option(
    "--max-runs",
    default=None,
    type=click.IntRange(min=1),
    help="Runs executed at once, at most; more wait [AGENTCTL_MAX_RUNS, 256].",
)
@click.option(
    "--open",
    "open_console",
    is_flag=True,
    help="Open the web console (/ui/) in a browser once the server is ready.",
)
def dev(
    config: Path,
    port: int,
    host: str,
    cors_origins: tuple[str, ...],
    allow_blocking: bool,
    max_runs: int | None,
    open_console: bool,
) -> None:
    """Run the project locally: one process on an embedded SQLite database, reloaded when a
    file of the project changes.

    Threads, runs and memory are kept in the project's .agentctl/data/ folder, so they
    survive a restart. Unless --allow-blocking is given, a blocking call on the server's
    event loop fails the run that made it, naming the call.
    """
    servers: list[DevServer] = []  # the server, once there is one
    with _interruptible_until_ready(servers):
        from agentctl.engine.admission import max_lag_setting
        from agentctl.server.devloop import DevServer, configure_logging
        from agentctl.server.http import listen_socket
        from agentctl.server.limits import Limits
        from agentctl.server.origins import OriginPolicy
        from agentctl.settings import read

        environ = dict(os.environ)  # the shell's: overlaid on .env (see `project.env`)
        step("Validating", str(config))
        first = prepare(config, environ, quiet=False)
        limits = Limits.from_env(environ)
        log_level = read("AGENTCTL_LOG_LEVEL", environ)
        trace = _trace(first.project.env)  # the shell's variables, or the project's .env
        sock = listen_socket(host, port)
        try:
            server = DevServer(
                first,
                lambda: prepare(config, environ, quiet=True),
                sock=sock,
                events=_Printer(open_console),
                allow_blocking=allow_blocking,
                origins=OriginPolicy.for_dev(cors_origins, host),
                limits=limits,
                max_runs=max_runs or read("AGENTCTL_MAX_RUNS", environ),
                max_lag=max_lag_setting(read("AGENTCTL_MAX_LOOP_LAG_MS", environ)),
            )
            servers.append(server)
            step("Starting", f'agent "{first.project.name}" on {server.url}')
            configure_logging(log_level)
            with asyncio.Runner(loop_factory=loop_factory()) as runner:
                runner.run(server.run())
        finally:
            sock.close()
            if trace:
                from agentctl.observability.tracing import shutdown_tracing

                shutdown_tracing()  # exports the spans not yet sent
    click.echo("stopped")


def _trace(env: Mapping[str, str]) -> bool:
    """Export traces when OTEL_EXPORTER_OTLP_ENDPOINT is set, as `serve` does."""
    from agentctl.observability.tracing import configure_tracing
    from agentctl.settings import read

    endpoint = read("OTEL_EXPORTER_OTLP_ENDPOINT", env)
    if not endpoint:
        return False
    service = read("OTEL_SERVICE_NAME", env)
    capture = read("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", env)
    configure_tracing(endpoint, service, capture_content=capture)
    content = ", with message content" if capture else ""
    step("Tracing", f"to {endpoint} as {service}{content}")
    return True


@contextmanager
def _interruptible_until_ready(servers: list[DevServer]) -> Iterator[None]:
    """Ctrl-C and SIGTERM end the start (exit status 130) until the server in `servers` is
    ready; from then on they stop it gracefully."""

    def interrupt() -> bool:
        if servers and servers[0].ready:
            return False
        _exit_interrupted()

    with signals(interrupt=interrupt):
        yield


def _exit_interrupted() -> NoReturn:
    """End the process at once, from the signal handler: an exception raised there could be
    swallowed by whatever code the signal interrupted (a callback, a cleanup) and leave the
    start waiting on. Nothing is served yet, so nothing is lost (the database writes
    transactions)."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(RuntimeError, ValueError, OSError):  # interrupted mid-write
            stream.flush()
    newline = "\n" if sys.stderr.isatty() else ""  # after the terminal's ^C
    os.write(2, f"{newline}interrupted before the server was ready\n".encode())
    os._exit(EXIT_INTERRUPTED)


def _origins(values: tuple[str, ...]) -> tuple[str, ...]:
    if not values:  # importing the server takes a while: not before the signals are ours
        return ()
    from agentctl.server.origins import parse_origin

    try:
        return tuple(parse_origin(value) for value in values)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--cors-origin") from None


def prepare(config: Path, environ: Mapping[str, str], *, quiet: bool) -> Build:
    """Load, validate and bundle the project, as `deploy --dry-run` does (no platform key
    is needed); the revision is stored under .agentctl/build/."""
    from agentctl.server.devloop import Build

    project = load_project(config, environ=environ, limits=RevisionLimits.from_env(environ))
    requirements = requirements_of(project)
    check_env(project, requirements, platform_key=False)
    missing = requirements.missing_packages()
    if missing:
        warn(f"packages the revision needs are not installed here: {install_command(missing)}")
    if not quiet:
        step("Bundling", f"{len(project.files)} files")
    revision = build_revision(project)
    try:
        store_revision(project, revision)
    except OSError as exc:  # the server needs no copy on disk: it serves the one in memory
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        warn(f"the disk holding {project.root / BUILD_DIR} is full: the revision was not "
             "written there (it is served from memory)")  # fmt: skip
    return Build(project, revision)


class _Printer:
    """What the dev server reports, as the user sees it; `open_console`: open the console
    in a browser once ready."""

    def __init__(self, open_console: bool = False) -> None:
        self.open_console = open_console

    def ready(self, dev: DevServer) -> None:
        build = dev.build
        click.echo(
            click.style("Ready: ", fg="green", bold=True)
            + f'agent "{build.project.name}", revision {build.revision.short_id}'
        )
        click.echo(f"  API   {dev.url}")
        click.echo(f"  Docs  {dev.url}/docs")
        click.echo(f"  UI    {dev.url}/ui/")
        self._try(dev)
        click.echo(f"  Data  {dev.data_dir}")
        self._auth(dev)
        for outage in dev.outages:
            warn(f"{outage}: serving read-only until it has room — requests that write get "
                 "503, runs wait and go on by themselves once there is space")  # fmt: skip
        blocking = (
            "blocking calls on the event loop are allowed"
            if dev.allow_blocking
            else "a blocking call on the event loop fails its run (--allow-blocking to allow)"
        )
        click.echo(f"Watching {dev.root} for changes; {blocking}. Press Ctrl-C to stop.")
        if self.open_console:
            # Off the event loop: finding and starting a browser blocks.
            threading.Thread(target=webbrowser.open, args=(f"{dev.url}/ui/",), daemon=True).start()

    def reloaded(self, dev: DevServer, previous: Build) -> None:
        build = dev.build
        click.echo(
            click.style("reloaded: ", fg="green", bold=True) + f"revision {build.revision.short_id}"
        )
        # How to call it changed: say so again.
        if (build.project.name, build.project.auth) != (
            previous.project.name,
            previous.project.auth,
        ):
            self._try(dev)
            self._auth(dev)

    def _try(self, dev: DevServer) -> None:
        project = dev.build.project
        header = BEARER if project.auth is not None else None
        click.echo(f"  Try   {example_call(dev.url, project.name, header)}")

    def _auth(self, dev: DevServer) -> None:
        auth = dev.build.project.auth
        if auth is None:
            click.echo("  Auth  none: anyone who can reach the address may call (no user memory)")
        else:
            click.echo(f"  Auth  {auth.provider}: requests need Authorization: Bearer <token>")

    def reload_failed(self, error: Exception, serving: Build) -> None:
        from agentctl.cli import report

        if isinstance(error, AgentctlError):
            report(error)
        else:
            click.secho("internal error: ", fg="red", bold=True, err=True, nl=False)
            click.echo(f"{type(error).__name__}: {error}", err=True)
        what = "the project is invalid" if isinstance(error, ConfigError) else "reload failed"
        click.echo(
            f"{what}: still serving revision {serving.revision.short_id} — fix it and save again",
            err=True,
        )


@contextmanager
def signals(interrupt: Callable[[], bool]) -> Iterator[None]:
    """Ctrl-C and SIGTERM raise KeyboardInterrupt while `interrupt()` is true. While uvicorn
    serves it handles them (a graceful stop) and raises them again once it is done: that
    interrupts us only when the signal came before the server was ready."""

    def handle(signum: int, frame: FrameType | None) -> None:
        if interrupt():
            raise KeyboardInterrupt

    saved = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop where it is installed, as uvicorn would choose."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - Windows
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory
