"""The platform sandbox service: named sandboxes on this machine, each a workspace folder
in which commands run isolated (`agentctl.sandbox.isolation`).

    <dir>/etc/                  passwd, group, hosts of every sandbox
    <dir>/boxes/<name>/
        sandbox.json            image, template, skills digest, creation time
        workspace/              /workspace: the sandbox's files (and `pip install`s)
        skills/                 /memories/skills: the agent's skills, read-only inside

Thread sandboxes (`t.*`) last as long as the service: they are removed when it starts
again. Assistant sandboxes (`a.*`) persist. Either kind is removed after it has been idle
for its TTL. A sandbox's memory (all its processes) is limited by a cgroup where one can be
made (`agentctl.sandbox.cgroup`), else watched from outside; its workspace's disk space is
watched (`agentctl.sandbox.usage`). Everything touching files runs off the event loop.
`agentctl serve` and `agentctl dev` run one in process; replicas share one run by
`agentctl sandbox-server` (`agentctl.sandbox.http`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import hashlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentctl.errors import (
    CgroupError,
    SandboxBusy,
    SandboxFull,
    SandboxNotFound,
    SandboxRefused,
    SandboxUnavailable,
)
from agentctl.sandbox import isolation, usage
from agentctl.sandbox.cgroup import Cgroups, open_cgroups
from agentctl.sandbox.isolation import DEFAULT_OPTIONS, Box, Finished, Limits, RunOptions, Watch
from agentctl.settings import SandboxSettings

log = logging.getLogger("agentctl.sandbox")

NAME = re.compile(r"[at]\.[A-Za-z0-9~-]{1,200}(\.[A-Za-z0-9~-]{1,200})?")
IMAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
DEFAULT_TEMPLATE = "agent-deploy"
STATE = "sandbox.json"
MEMORY_CHECK = 0.2  # seconds between measures of a command's memory, without a cgroup
DISK_CHECK = 1.0  # seconds (at least) between measures of a workspace's disk space
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


@dataclass(frozen=True)
class SandboxSpec:
    """What a sandbox is made from: an image, a workspace template and the agent's skills
    (paths relative to `skills/`)."""

    image: str = "python:3"
    template: str = DEFAULT_TEMPLATE
    skills: Mapping[str, bytes] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        hashed = hashlib.sha256()
        for path in sorted(self.skills):
            hashed.update(path.encode() + b"\0" + hashlib.sha256(self.skills[path]).digest())
        return hashed.hexdigest()


@dataclass(frozen=True)
class SandboxInfo:
    name: str
    image: str
    template: str
    created_at: float
    last_used_at: float


class Sandboxes(Protocol):
    """The sandbox service, in process (`SandboxService`) or over HTTP (`SandboxClient`)."""

    async def check(self, spec: SandboxSpec) -> None:
        """Raise `SandboxUnavailable` or `SandboxRefused` if `spec` cannot run here."""
        ...

    async def ensure(self, name: str, spec: SandboxSpec) -> bool:
        """Create sandbox `name` if it does not exist (True), and sync its skills."""
        ...

    async def execute(
        self, name: str, command: str, options: RunOptions = DEFAULT_OPTIONS
    ) -> Finished:
        """Run `command` in sandbox `name`; `SandboxNotFound` if there is none."""
        ...

    async def delete(self, name: str) -> bool: ...

    async def list_sandboxes(self) -> list[SandboxInfo]: ...

    async def aclose(self) -> None: ...


class SandboxService:
    def __init__(self, settings: SandboxSettings, directory: Path) -> None:
        self.settings = settings
        self.directory = directory
        self.boxes = directory / "boxes"
        self.limits = Limits(
            timeout=settings.timeout_seconds,
            cpu_seconds=settings.cpu_seconds,
            memory_bytes=settings.memory_mb << 20,
            processes=settings.processes,
            file_bytes=settings.file_size_mb << 20,
            output_bytes=settings.output_bytes,
            disk_bytes=settings.disk_mb << 20,
        )
        self.uid = isolation.host_uid(settings.uid)
        self.cgroups: Cgroups | None = None  # known once started
        self._locks: dict[str, asyncio.Lock] = {}
        self._busy: dict[str, int] = {}
        self._disk: dict[str, int] = {}  # bytes in each sandbox's workspace, last measured
        self._memory: dict[str, dict[int, int]] = {}  # bytes per running command, measured
        self._started: asyncio.Task[None] | None = None
        self._reaper: asyncio.Task[None] | None = None
        self._warned: set[str] = set()

    # -- the Sandboxes protocol ------------------------------------------------------------

    async def check(self, spec: SandboxSpec) -> None:
        await self.start()
        await asyncio.to_thread(self._check, spec)

    def _check(self, spec: SandboxSpec) -> None:
        self._root(spec.image)
        self._template(spec.template)

    async def ensure(self, name: str, spec: SandboxSpec) -> bool:
        _check_name(name)
        await self.start()
        async with self._lock(name):
            with self._writing(name):
                return await asyncio.to_thread(self._ensure, name, spec)

    async def execute(
        self, name: str, command: str, options: RunOptions = DEFAULT_OPTIONS
    ) -> Finished:
        _check_name(name)
        await self.start()
        async with self._lock(name):  # not while it is being made, changed or removed
            with self._writing(name):
                box = await asyncio.to_thread(self._box, name)
            self._busy[name] = self._busy.get(name, 0) + 1
        try:
            used = self._disk.get(name)
            if used is None:
                used = self._disk[name] = await asyncio.to_thread(usage.disk_used, box.workspace)
            stdin = options.stdin
            if stdin is not None and used + len(stdin) > self.limits.disk_bytes:
                raise SandboxFull(
                    f"sandbox {name}: writing {len(stdin)} bytes would take its /workspace "
                    f"({used >> 20} MB used) past its disk limit of "
                    f"{self.limits.disk_bytes >> 20} MB (AGENTCTL_SANDBOX_DISK_MB)"
                )
            # No file may outgrow the room left; when there is none, files can only shrink.
            room = max(0, self.limits.disk_bytes - used)
            limits = dataclasses.replace(self.limits, file_bytes=min(self.limits.file_bytes, room))
            return await self._run(name, box, command, limits, used, options)
        finally:
            self._busy[name] -= 1

    async def _run(
        self, name: str, box: Box, command: str, limits: Limits, used: int, options: RunOptions
    ) -> Finished:
        network = self.settings.network == "host"
        argv = await asyncio.to_thread(
            isolation.command_line, box, command, limits, network=network
        )
        argv = isolation.as_user(argv, self.uid)
        cgroup: Path | None = None
        oom_before = oom_after = 0
        if self.cgroups is not None:
            cgroup = await asyncio.to_thread(self.cgroups.prepare, name, self.limits.memory_bytes)
            argv = self.cgroups.join(cgroup, argv)
            oom_before = await asyncio.to_thread(self.cgroups.oom_kills, cgroup)
        watch = self._watch(name, box.workspace, allowed=max(used, self.limits.disk_bytes))
        try:
            finished = await isolation.run(argv, limits, options, watch=watch)
        finally:
            self._disk[name] = await asyncio.to_thread(usage.disk_used, box.workspace)
            if cgroup is not None and self.cgroups is not None:
                oom_after = await asyncio.to_thread(self.cgroups.oom_kills, cgroup)
                if self._busy.get(name, 0) <= 1:
                    await asyncio.to_thread(self.cgroups.release, cgroup)
        if cgroup is not None and oom_after > oom_before and finished.stopped is None:
            why = self._too_much_memory()
            return dataclasses.replace(finished, exit_code=isolation.KILLED, stopped=why)
        return finished

    def _watch(self, name: str, workspace: Path, *, allowed: int) -> Watch:
        """Stops a command when its sandbox's processes (all its commands) take more memory
        than the limit (unless a cgroup limits them), or its workspace grows past `allowed`."""
        memory = self._memory.setdefault(name, {})
        limit = self.limits.memory_bytes

        async def watch(pid: int) -> str:
            next_disk = time.monotonic() + DISK_CHECK
            try:
                while True:
                    await asyncio.sleep(MEMORY_CHECK)
                    if self.cgroups is None:
                        memory[pid] = await asyncio.to_thread(usage.command_memory, pid)
                        if sum(memory.values()) > limit:
                            return self._too_much_memory()
                    if time.monotonic() >= next_disk:
                        began = time.monotonic()
                        used = await asyncio.to_thread(usage.disk_used, workspace)
                        self._disk[name] = used
                        if used > allowed:
                            return (
                                f"its files in /workspace went past the disk limit of "
                                f"{self.limits.disk_bytes >> 20} MB"
                            )
                        # a large workspace is measured less often
                        next_disk = time.monotonic() + max(
                            DISK_CHECK, 10 * (time.monotonic() - began)
                        )
            finally:
                memory.pop(pid, None)

        return watch

    def _too_much_memory(self) -> str:
        return (
            f"its processes used more than the memory limit of {self.limits.memory_bytes >> 20} "
            "MB of the sandbox"
        )

    def _box(self, name: str) -> Box:
        folder = self.boxes / name
        state = self._state(folder)
        if state is None:
            raise SandboxNotFound(f"there is no sandbox {name}")
        os.utime(folder / STATE)
        return Box(
            root=self._root(state["image"]),
            etc=self.directory / "etc",
            workspace=folder / "workspace",
            skills=folder / "skills" if (folder / "skills").is_dir() else None,
        )

    @contextlib.contextmanager
    def _writing(self, name: str) -> Iterator[None]:
        """A full disk under the service's own writes is a 507 naming it, not a crash."""
        try:
            yield
        except OSError as exc:
            if exc.errno not in NO_SPACE:
                raise
            raise SandboxFull(
                f"sandbox {name}: no space left on the disk of the sandbox service "
                f"({self.directory}, AGENTCTL_SANDBOX_DIR): {exc.strerror}"
            ) from None

    async def delete(self, name: str) -> bool:
        _check_name(name)
        async with self._lock(name):
            folder = self.boxes / name
            if not folder.is_dir():
                return False
            if self._busy.get(name):
                raise SandboxBusy(f"sandbox {name} is running a command: delete it after")
            await asyncio.to_thread(_remove, folder)
            self._disk.pop(name, None)
            return True

    def _lock(self, name: str) -> asyncio.Lock:
        return self._locks.setdefault(name, asyncio.Lock())

    async def list_sandboxes(self) -> list[SandboxInfo]:
        return await asyncio.to_thread(self._list)

    async def aclose(self) -> None:
        for task in (self._reaper, self._started):
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    # -- starting --------------------------------------------------------------------------

    async def start(self) -> None:
        """Prepare the folders, drop the previous run's thread sandboxes, prove that a
        sandbox can run here, and start expiring idle ones; done once, on first use."""
        started = self._started
        if started is None or (
            started.done() and not started.cancelled() and started.exception() is not None
        ):  # not yet, or it failed: try (again)
            self._started = started = asyncio.ensure_future(self._first_start())
        await asyncio.shield(started)

    async def _first_start(self) -> None:
        isolation.bwrap()
        await asyncio.to_thread(self._prepare)
        probe = self.boxes / ".probe"
        await asyncio.to_thread(self._create, probe, SandboxSpec(image=isolation.HOST_IMAGE))
        box = Box(None, self.directory / "etc", probe / "workspace", None)
        argv = await asyncio.to_thread(
            isolation.command_line, box, "echo ok", self.limits, network=False
        )
        argv = isolation.as_user(argv, self.uid)
        finished = await isolation.run(argv, self.limits, RunOptions(timeout=30))
        await asyncio.to_thread(_remove, probe)
        if finished.output.strip() != b"ok":
            said = finished.output.decode("utf-8", "replace").strip()
            raise SandboxUnavailable(
                f"sandboxes cannot run on this machine: bubblewrap said {said!r} — it needs "
                "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) and "
                f"a {self.directory} every user may traverse (chmod o+x on its parents)"
            )
        self.cgroups = await asyncio.to_thread(self._open_cgroups)
        self._reaper = asyncio.create_task(self._reap_forever())

    def _open_cgroups(self) -> Cgroups | None:
        try:
            cgroups = open_cgroups(self.settings.cgroup)
        except CgroupError as exc:
            if self.settings.cgroup not in ("auto", "off"):
                raise SandboxUnavailable(str(exc)) from None
            log.info(
                "sandbox memory: no cgroup (%s); the service measures each sandbox's "
                "processes instead",
                exc,
            )
            return None
        log.info("sandbox memory: a cgroup per sandbox, under %s", cgroups.base)
        return cgroups

    def _prepare(self) -> None:
        self.boxes.mkdir(parents=True, exist_ok=True)
        if self.uid is not None:
            _check_reachable(self.directory.resolve(), self.uid)
        for folder in (self.directory, self.boxes):
            folder.chmod(0o711)
        etc = self.directory / "etc"
        etc.mkdir(exist_ok=True)
        etc.chmod(0o755)
        for name, data in isolation.ETC_FILES.items():
            (etc / name).write_bytes(data)
            (etc / name).chmod(0o644)
        for folder in self.boxes.iterdir():
            if folder.name.startswith(("t.", ".")):  # thread sandboxes end with the service
                _remove(folder)

    # -- sandboxes on disk -----------------------------------------------------------------

    def _ensure(self, name: str, spec: SandboxSpec) -> bool:
        _check_skills(spec)
        folder = self.boxes / name
        state = self._state(folder)
        if state is None:  # made whole aside, then renamed: never seen half made
            self._root(spec.image)
            template = self._template(spec.template)
            staging = self.boxes / f".new-{name}"
            _remove(staging)
            try:
                self._create(staging, spec, template)
                self._sync_skills(staging, spec)
            except BaseException:
                _remove(staging)
                raise
            staging.rename(folder)
            log.info("sandbox %s created (image %s)", name, spec.image)
            return True
        if state["image"] != spec.image:  # a new revision may change it; the files stay
            self._root(spec.image)
            state["image"] = spec.image
            _write_state(folder, state)
        if state.get("skills_digest") != spec.digest:
            self._sync_skills(folder, spec)
        return False

    def _create(self, folder: Path, spec: SandboxSpec, template: Path | None = None) -> None:
        folder.mkdir(parents=True)
        folder.chmod(0o711)
        workspace = folder / "workspace"
        if template is not None:
            shutil.copytree(template, workspace, symlinks=True)
        else:
            workspace.mkdir()
        if self.uid is not None:
            for path in [workspace, *workspace.rglob("*")]:
                os.lchown(path, self.uid, self.uid)
        now = time.time()
        state = {"image": spec.image, "template": spec.template, "created_at": now}
        _write_state(folder, state)

    def _sync_skills(self, folder: Path, spec: SandboxSpec) -> None:
        """Replace the sandbox's skills with `spec`'s, whole (commands see one or the other)."""
        staging = folder / "skills.new"
        _remove(staging)
        staging.mkdir()
        try:
            for path, data in spec.skills.items():
                (staging / path).parent.mkdir(parents=True, exist_ok=True)
                (staging / path).write_bytes(data)
        except OSError as exc:  # e.g. both `a` and `a/b`
            _remove(staging)
            raise SandboxRefused(f"the skill files cannot be written: {exc.strerror}") from None
        for written in [staging, *staging.rglob("*")]:
            written.chmod(0o755 if written.is_dir() else 0o644)
        old = folder / "skills.old"
        _remove(old)
        if (folder / "skills").exists():
            (folder / "skills").rename(old)
        staging.rename(folder / "skills")
        _remove(old)
        state = self._state(folder) or {}
        state["skills_digest"] = spec.digest
        _write_state(folder, state)

    def _state(self, folder: Path) -> dict[str, Any] | None:
        try:
            state: dict[str, Any] = json.loads((folder / STATE).read_text())
        except FileNotFoundError:
            return None
        return state

    def _list(self) -> list[SandboxInfo]:
        found = []
        for folder in sorted(self.boxes.glob("[at].*")):
            state = self._state(folder)
            if state is not None:
                used = (folder / STATE).stat().st_mtime
                fields = {k: state[k] for k in ("image", "template", "created_at")}
                found.append(SandboxInfo(name=folder.name, last_used_at=used, **fields))
        return found

    # -- images and templates --------------------------------------------------------------

    def _root(self, image: str) -> Path | None:
        """The root filesystem of `image`: a prepared one, else the fallback (see settings)."""
        if image == isolation.HOST_IMAGE:
            return None
        if not IMAGE_NAME.fullmatch(image):
            raise SandboxRefused(f"sandbox image {image!r} is not a valid image name")
        prepared = Path(self.settings.images_dir) / image
        if (prepared / "usr").is_dir():
            _check_image(image, prepared)
            if self.uid is not None:
                _check_reachable(prepared.resolve(), self.uid)
            return prepared
        fallback = self.settings.fallback_image
        if fallback == "none" or fallback == image:
            raise SandboxRefused(
                f"sandbox image {image!r} is not prepared on this platform: build its root "
                f"filesystem into {prepared} (see docs/sandbox.md)"
            )
        if image not in self._warned:
            self._warned.add(image)
            log.warning(
                "sandbox image %s is not prepared in %s: using image %s instead",
                image,
                self.settings.images_dir,
                fallback,
            )
        return self._root(fallback)

    def _template(self, template: str) -> Path | None:
        if not IMAGE_NAME.fullmatch(template):
            raise SandboxRefused(f"sandbox template {template!r} is not a valid template name")
        folder = Path(self.settings.templates_dir) / template
        if folder.is_dir():
            return folder
        if template == DEFAULT_TEMPLATE:
            return None  # the default template, unprepared: an empty workspace
        raise SandboxRefused(
            f"sandbox template {template!r} is not prepared on this platform: put the files "
            f"the workspace starts with in {folder}"
        )

    # -- expiry ----------------------------------------------------------------------------

    async def _reap_forever(self) -> None:
        every = min(60.0, self.settings.thread_ttl_seconds / 4)
        while True:
            await asyncio.sleep(every)
            try:
                for info in await self.list_sandboxes():
                    if not self._idle(info.name):
                        continue
                    async with self._lock(info.name):
                        if self._idle(info.name):  # still, now that no ensure runs
                            await asyncio.to_thread(_remove, self.boxes / info.name)
                            self._disk.pop(info.name, None)
                            log.info("sandbox %s expired", info.name)
            except Exception:  # the next round tries again
                log.exception("expiring idle sandboxes failed")

    def _idle(self, name: str) -> bool:
        """Unused for longer than its scope's TTL, and running nothing."""
        ttl = {"t": self.settings.thread_ttl_seconds, "a": self.settings.assistant_ttl_seconds}
        try:
            used = (self.boxes / name / STATE).stat().st_mtime
        except FileNotFoundError:
            return False
        return time.time() - used > ttl[name[0]] and not self._busy.get(name)


def _check_image(image: str, root: Path) -> None:
    """An image needs prlimit (util-linux) and the /etc files placed over its own."""
    if not (root / "usr/bin/prlimit").exists():
        raise SandboxRefused(
            f"sandbox image {image!r} ({root}) lacks /usr/bin/prlimit: install util-linux in it"
        )
    for name in isolation.ETC_FILES:
        if not (root / "etc" / name).exists():
            raise SandboxRefused(
                f"sandbox image {image!r} ({root}) lacks /etc/{name}: create it (touch "
                f"{root}/etc/{name}); every sandbox gets its own"
            )


def _check_reachable(folder: Path, uid: int) -> None:
    """Sandboxes run as `uid`, which must be able to reach their folders and images."""
    for parent in reversed(folder.parents):
        if not parent.stat().st_mode & 0o001:
            raise SandboxUnavailable(
                f"sandboxes run as user {uid}, who cannot reach {folder}: {parent} is not "
                f"searchable by other users — move the folder out of it, or chmod o+x {parent}"
            )


def _write_state(folder: Path, state: dict[str, Any]) -> None:
    """Replace `sandbox.json` whole: a command starting meanwhile reads the old or the new."""
    staging = folder / f".{STATE}.new"
    staging.write_text(json.dumps(state))
    os.replace(staging, folder / STATE)


def _check_skills(spec: SandboxSpec) -> None:
    for path in spec.skills:
        parts = Path(path).parts
        if not path or "\0" in path or Path(path).is_absolute() or ".." in parts:
            raise SandboxRefused(f"skill file {path!r} is not a path inside the skills folder")


def _check_name(name: str) -> None:
    if not NAME.fullmatch(name):
        raise SandboxNotFound(f"{name!r} is not a sandbox name")


def _remove(folder: Path) -> None:
    """Remove `folder`, even where a command made parts of it unreadable."""

    def unlock(function: Any, path: str, _: Any) -> None:
        for folder in (os.path.dirname(path), path):
            if os.path.isdir(folder) and not os.path.islink(folder):
                os.chmod(folder, 0o700)
        function(path)

    if folder.exists() or folder.is_symlink():
        shutil.rmtree(folder, onerror=unlock)
