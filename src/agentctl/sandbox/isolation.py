"""One command in an isolated Linux environment, with bubblewrap.

Each command runs in fresh mount, PID, network (none unless allowed), IPC, UTS, cgroup and
user namespaces, as an unprivileged user, with an empty environment. It sees:

    /                 the image, read-only (or the host's /usr, read-only, for `host`)
    /workspace        the sandbox's own files, writable, kept between commands (cwd, HOME)
    /memories/skills  the agent's skills, read-only
    /tmp, /proc, /dev private to the command

and nothing else of the machine: not the server's files, environment, processes or network.
Limits: per-process CPU time, address space, file size and open files, processes per sandbox
(`prlimit`, inside the namespaces), wall-clock time, and output size; what a `Watch` given to
`run` stops it for (the service's memory and disk limits of a whole sandbox).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from agentctl.errors import SandboxUnavailable

log = logging.getLogger("agentctl.sandbox")

SANDBOX_UID = 1000  # the user inside; outside it is the server's user, or `AGENTCTL_SANDBOX_UID`
WORKSPACE = "/workspace"
SKILLS = "/memories/skills"
HOST_IMAGE = "host"
TIMED_OUT = 124  # the exit code of a command stopped at its time limit, as timeout(1) has it
KILLED = 128 + signal.SIGKILL  # the exit code of a command killed for a limit
PATH = f"{WORKSPACE}/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What an image's top level may hold that is not bound into the sandbox.
_NOT_FROM_IMAGE = frozenset(
    {"proc", "dev", "sys", "tmp", "run", "workspace", "memories", "home", "root", "mnt",
     "media", "boot", "lost+found"}
)  # fmt: skip
ETC_FILES = {
    "passwd": b"root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/workspace:/bin/sh\n",
    "group": b"root:x:0:\nsandbox:x:1000:\n",
    "hosts": b"127.0.0.1 localhost sandbox\n::1 localhost\n",
}
# The `host` image: this machine's system folders, and of its /etc only what programs need
# and nothing secret.
_HOST_ROOT = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
_HOST_ETC = ("alternatives", "ld.so.cache", "ssl", "localtime", "mime.types")


@dataclass(frozen=True)
class Limits:
    timeout: float  # wall-clock seconds per command
    cpu_seconds: int  # per process
    memory_bytes: int  # all processes and /tmp of a sandbox; address space of each process
    processes: int  # at once, per command
    file_bytes: int  # largest file a command may write
    output_bytes: int  # output kept per command; past 16x this, the command is stopped
    disk_bytes: int = 2 << 30  # a sandbox's /workspace (enforced by the service)
    open_files: int = 512


# Given the pid of a running command, returns (only) when it must be stopped: why, in words.
Watch = Callable[[int], Awaitable[str]]


@dataclass(frozen=True)
class Finished:
    output: bytes
    exit_code: int | None
    truncated: bool = False
    stopped: str | None = None  # why the command was stopped, in words, if it was


@dataclass(frozen=True)
class RunOptions:
    """What one command is given beside its text (None: what the limits say)."""

    timeout: float | None = None  # seconds; never more than the limit
    stdin: bytes | None = None
    output_bytes: int | None = None  # output kept, instead of the limit's


DEFAULT_OPTIONS = RunOptions()  # everything as the limits say


@dataclass(frozen=True)
class Box:
    """Where one sandbox's files are on the host."""

    root: Path | None  # the image's root filesystem; None: the host's /usr (image `host`)
    etc: Path  # passwd, group and hosts, placed over the image's
    workspace: Path
    skills: Path | None


def bwrap() -> str:
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailable(
            "the platform sandbox needs bubblewrap — install it (Debian/Ubuntu: "
            "apt-get install bubblewrap)"
        )
    return found


def host_uid(configured: int) -> int | None:
    """The user sandboxes run as on the host: `configured` when the server is root (a root
    sandbox would be exempt from process limits), else the server's own (None: no change)."""
    return configured if os.geteuid() == 0 else None


def command_line(box: Box, command: str, limits: Limits, *, network: bool) -> list[str]:
    """The bwrap invocation running `command` with `sh -c` in `box`."""
    args = [
        bwrap(),
        "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
        "--disable-userns", "--die-with-parent", "--new-session",
        "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "sandbox",
    ]  # fmt: skip
    if not network:
        args.append("--unshare-net")
    args += _root(box.root, network=network)
    for name in ETC_FILES:
        args += ["--ro-bind", str(box.etc / name), f"/etc/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    for scratch in ("/tmp", "/dev/shm"):  # in memory: capped
        args += ["--size", str(limits.memory_bytes), "--tmpfs", scratch]
    args += ["--bind", str(box.workspace), WORKSPACE, "--chdir", WORKSPACE]
    if box.skills is not None:
        args += ["--ro-bind", str(box.skills), SKILLS]
    # The root and /dev are bubblewrap's own in-memory folders: read-only once set up.
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]
    args += ["--clearenv"]
    for name, value in _environment().items():
        args += ["--setenv", name, value]
    args += [
        "--", "/usr/bin/prlimit",
        f"--nproc={limits.processes}", f"--as={limits.memory_bytes}",
        f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}",  # SIGXCPU, then SIGKILL
        f"--fsize={limits.file_bytes}",
        f"--nofile={limits.open_files}", "--core=0",
        "--", "/bin/sh", "-c", command,
    ]  # fmt: skip
    return args


def _root(image: Path | None, *, network: bool) -> list[str]:
    """Binds making up `/`: the top-level entries of the image (or the host's system
    folders), read-only; for the host, only the harmless part of its /etc."""
    top = [Path("/", name) for name in _HOST_ROOT] if image is None else sorted(image.iterdir())
    args: list[str] = []
    for entry in top:
        if entry.name in _NOT_FROM_IMAGE or not os.path.lexists(entry):
            continue
        if entry.is_symlink():
            args += ["--symlink", os.readlink(entry), f"/{entry.name}"]
        elif entry.is_dir():
            args += ["--ro-bind", str(entry), f"/{entry.name}"]
    if image is None:
        for name in _HOST_ETC:
            if Path("/etc", name).exists():
                args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        if network and Path("/etc/resolv.conf").exists():
            args += ["--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf"]
    return args


def _environment() -> dict[str, str]:
    return {
        "PATH": PATH,
        "HOME": WORKSPACE,
        "USER": "sandbox",
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        # `pip install` goes to the workspace, so installed packages persist with it.
        "PYTHONUSERBASE": f"{WORKSPACE}/.local",
        "PIP_USER": "1",
        "PIP_BREAK_SYSTEM_PACKAGES": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


def as_user(argv: list[str], uid: int | None) -> list[str]:
    """`argv` run as `uid` (None: as this process's user)."""
    if uid is None:
        return argv
    # with setpriv: uvloop's subprocesses cannot change user themselves
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", *argv]


async def run(
    argv: list[str],
    limits: Limits,
    options: RunOptions = DEFAULT_OPTIONS,
    *,
    watch: Watch | None = None,
) -> Finished:
    """Run `argv` (from `command_line`, as `as_user`), feeding it the options' `stdin`, and
    collect its output (stdout and stderr together) within the limits, and until `watch` says
    to stop. Never raises for what the command does."""
    stdin = options.stdin
    keep = options.output_bytes or limits.output_bytes
    seconds = min(options.timeout or limits.timeout, limits.timeout)
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        start_new_session=True,
    )
    if stdin is not None:
        assert process.stdin is not None
        asyncio.get_running_loop().create_task(_feed(process.stdin, stdin))
    assert process.stdout is not None
    watcher = asyncio.ensure_future(_watching(watch, process.pid)) if watch else None
    kept = bytearray()
    seen = 0
    stopped: str | None = None
    try:
        async with asyncio.timeout(seconds):
            while chunk := await process.stdout.read(65536):
                seen += len(chunk)
                if len(kept) < keep:
                    kept += chunk[: keep - len(kept)]
                if seen > 16 * keep:
                    stopped = f"it wrote more than {16 * keep} bytes of output"
                    break
    except TimeoutError:
        stopped = f"it ran longer than the time limit of {seconds:g} s"
    except BaseException:  # the caller gave up (a cancelled run): the command goes too
        _kill(process.pid)
        raise
    finally:
        if watcher is not None and not watcher.done():
            watcher.cancel()
    if stopped is not None:
        _kill(process.pid)
        while await process.stdout.read(65536):  # to the end, or the process is never done
            pass
    code = await process.wait()
    why = watcher.result() if watcher and watcher.done() and not watcher.cancelled() else None
    if why is not None and stopped is None:  # the watch killed the command
        return Finished(bytes(kept), KILLED, seen > keep, why)
    return Finished(bytes(kept), _exit_code(code, stopped), seen > keep, stopped)


async def _watching(watch: Watch, pid: int) -> str | None:
    try:
        why = await watch(pid)
    except Exception:  # the command goes on, unwatched
        log.exception("watching a sandboxed command failed")
        return None
    _kill(pid)
    return why


async def _feed(pipe: asyncio.StreamWriter, data: bytes) -> None:
    try:
        pipe.write(data)
        await pipe.drain()
        pipe.close()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command did not read all of it


def _kill(pid: int) -> None:
    """Kill bwrap; `--die-with-parent` and the PID namespace take everything inside with it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _exit_code(code: int, stopped: str | None) -> int | None:
    if stopped is not None:
        return TIMED_OUT if "time" in stopped else None
    return 128 - code if code < 0 else code
