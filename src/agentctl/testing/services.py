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
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


class ServiceUnavailable(RuntimeError):
    """Neither a running server nor the packages to start one."""


_started: dict[str, str] = {}  # kind -> url of the throwaway server this process started


def postgres_url() -> str:
    """An admin URL of a PostgreSQL server that answers (it may create databases)."""
    url = os.environ.get("DATABASE_URL") or DEFAULT_POSTGRES
    if _postgres_answers(url):
        return url
    if "postgres" not in _started:
        _started["postgres"] = _start_postgres()
    return _started["postgres"]


def redis_url() -> str:
    """The URL of a Redis server that answers."""
    url = os.environ.get("REDIS_URL") or DEFAULT_REDIS
    if _redis_answers(url):
        return url
    if "redis" not in _started:
        _started["redis"] = _start_redis()
    return _started["redis"]


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


def _start_postgres() -> str:
    initdb, postgres = _postgres_binary("initdb"), _postgres_binary("postgres")
    if initdb is None or postgres is None:
        raise ServiceUnavailable(
            "no PostgreSQL answers at DATABASE_URL or 127.0.0.1:5432, and none can be started "
            "here — install it (Debian: apt-get install postgresql) or set DATABASE_URL"
        )
    folder = Path(tempfile.mkdtemp(prefix="agentctl-pg-"))
    data, sockets = folder / "data", folder / "sockets"
    sockets.mkdir()
    # initdb refuses to run as root: the cluster belongs to the `postgres` user then.
    run_as: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        shutil.chown(sockets, "postgres")
        run_as = ["runuser", "-u", "postgres", "--"]
    subprocess.run(
        [*run_as, initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
        check=True,
        capture_output=True,
    )
    port = free_port()
    process = subprocess.Popen(
        [*run_as, postgres, "-D", str(data), "-p", str(port), "-k", str(sockets),
         "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=300"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    atexit.register(_stop, process, folder)
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    _wait_until(lambda: _postgres_answers(url), process, "PostgreSQL")
    return url


def _start_redis() -> str:
    binary = shutil.which("redis-server")
    if binary is None:
        raise ServiceUnavailable(
            "no Redis answers at REDIS_URL or 127.0.0.1:6379, and none can be started here — "
            "install it (Debian: apt-get install redis-server) or set REDIS_URL"
        )
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(_stop, process, None)
    url = f"redis://127.0.0.1:{port}/0"
    _wait_until(lambda: _redis_answers(url), process, "Redis")
    return url


def _wait_until(ready: object, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServiceUnavailable(f"the throwaway {what} server exited at start")
        if callable(ready) and ready():
            return
        time.sleep(0.2)
    raise ServiceUnavailable(f"the throwaway {what} server did not answer within 30 s")


def _stop(process: subprocess.Popen[bytes], folder: Path | None) -> None:
    process.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(10)
    if process.poll() is None:
        process.kill()
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
