"""PostgreSQL and Redis for tests and benchmarks: the servers `DATABASE_URL` / `REDIS_URL`
name (or the usual local ones) when they answer, else throwaway servers started from the
Debian packages (`postgresql`, `redis-server`), else an error saying what to install.

Each caller gets its own database (`fresh_database`) and its own Redis key prefix, so tests
sharing one server never see each other's data.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


class ServiceUnavailable(RuntimeError):
    """Neither a running server nor the packages to start one."""


_started: dict[str, str] = {}  # variable -> url of the throwaway server this process started


def postgres_url() -> str:
    """An admin URL of a PostgreSQL server that answers (it may create databases)."""
    return _answering("DATABASE_URL", DEFAULT_POSTGRES, _postgres_answers, ThrowawayPostgres)


def redis_url() -> str:
    """The URL of a Redis server that answers."""
    return _answering("REDIS_URL", DEFAULT_REDIS, _redis_answers, ThrowawayRedis)


def _answering(
    variable: str,
    default: str,
    answers: Callable[[str], bool],
    throwaway: Callable[[], ThrowawayServer],
) -> str:
    """The server `variable` names (else `default`) when it answers, else a throwaway one,
    started once per process."""
    url = os.environ.get(variable) or default
    if answers(url):
        return url
    if variable not in _started:
        _started[variable] = throwaway().start().url
    return _started[variable]


def fresh_database(admin_url: str) -> str:
    """Create an empty database on the server of `admin_url` and return its URL."""
    import psycopg

    name = f"agentctl_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(admin_url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def drop_database(url: str) -> None:
    """Drop the database of `url` (made by `fresh_database`), closing its connections."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def fresh_prefix() -> str:
    """A Redis key prefix no one else uses."""
    return f"agentctl-test-{uuid.uuid4().hex[:12]}"


# -- is it there? ------------------------------------------------------------------------


def _postgres_answers(url: str) -> bool:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True


def _redis_answers(url: str) -> bool:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


# -- throwaway servers -------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _postgres_binary(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    return found[0] if found else shutil.which(name)


class ThrowawayServer:
    """A server of ours on a free loopback port, with its data in a folder of its own, that
    can be stopped and started again on the same port with its data (as a restart does).
    Tests of outages stop it mid-run; it is removed when this process exits."""

    what = "server"

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix=f"agentctl-{self.what.lower()}-"))
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        atexit.register(self.remove)

    @property
    def url(self) -> str:
        raise NotImplementedError

    def command(self) -> list[str]:
        raise NotImplementedError

    def answers(self) -> bool:
        raise NotImplementedError

    def start(self) -> ThrowawayServer:
        """Start the server and wait until it answers."""
        self.process = subprocess.Popen(
            self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _wait_until(self.answers, self.process, self.what)
        return self

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """Stop the server with `sig` (SIGKILL: as a crash) and wait until it has exited."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


class ThrowawayPostgres(ThrowawayServer):
    """A PostgreSQL cluster of its own (`initdb` once); `stop()` is a fast shutdown, which
    ends every session as a restart of the service does."""

    what = "PostgreSQL"

    def __init__(self) -> None:
        initdb, self.binary = _postgres_binary("initdb"), _postgres_binary("postgres")
        if initdb is None or self.binary is None:
            raise ServiceUnavailable(
                "no PostgreSQL answers at DATABASE_URL or 127.0.0.1:5432, and none can be "
                "started here — install it (Debian: apt-get install postgresql) or set "
                "DATABASE_URL"
            )
        super().__init__()
        self.data, self.sockets = self.folder / "data", self.folder / "sockets"
        self.sockets.mkdir()
        # initdb refuses to run as root: the cluster belongs to the `postgres` user then.
        self.run_as: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")
            shutil.chown(self.sockets, "postgres")
            self.run_as = ["runuser", "-u", "postgres", "--"]
        subprocess.run(
            [*self.run_as, initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres",
             "--no-sync"],
            check=True,
            capture_output=True,
        )  # fmt: skip

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def command(self) -> list[str]:
        return [*self.run_as, self.binary or "postgres", "-D", str(self.data),
                "-p", str(self.port), "-k", str(self.sockets),
                "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
                "-c", "max_connections=300"]  # fmt: skip

    def answers(self) -> bool:
        return _postgres_answers(self.url)

    def stop(self, sig: signal.Signals = signal.SIGINT) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        # Under `runuser` the postmaster is its child, which the signal must reach.
        try:
            postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            postmaster = self.process.pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(postmaster, sig)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            super().stop(signal.SIGKILL)


class ThrowawayRedis(ThrowawayServer):
    """A Redis of its own that keeps its data across a restart (an append-only file synced
    at every write, as a production Redis that must not lose streams is configured)."""

    what = "Redis"

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServiceUnavailable(
                "no Redis answers at REDIS_URL or 127.0.0.1:6379, and none can be started "
                "here — install it (Debian: apt-get install redis-server) or set REDIS_URL"
            )
        self.binary = binary
        super().__init__()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def command(self) -> list[str]:
        return [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", str(self.folder), "--save", "", "--appendonly", "yes",
                "--appendfsync", "always"]  # fmt: skip

    def answers(self) -> bool:
        return _redis_answers(self.url)


def _wait_until(ready: Callable[[], bool], process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServiceUnavailable(f"the throwaway {what} server exited at start")
        if ready():
            return
        time.sleep(0.2)
    raise ServiceUnavailable(f"the throwaway {what} server did not answer within 30 s")
