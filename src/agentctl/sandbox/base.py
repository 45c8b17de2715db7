"""What the agent's sandbox is made of, whichever provider runs it.

    SandboxKey        which sandbox a run uses: one per thread, or one per assistant
    SandboxPool       a provider: hands out the sandbox of a key, creating it when needed
    ScopedSandbox     the deepagents backend the agent gets: per call, it finds the run's key
                      in the run's config and delegates to that sandbox

The pools are `agentctl.sandbox.platform.PlatformPool` (our own service) and the partner
providers of `agentctl.sandbox.partners`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from deepagents.backends.protocol import (
    DeleteResult,
    EditResult,
    ExecuteResponse,
    FileDownloadResponse,
    FileUploadResponse,
    GlobResult,
    GrepResult,
    LsResult,
    ReadResult,
    SandboxBackendProtocol,
    WriteResult,
)
from langgraph.config import get_config

from agentctl.project.model import SandboxScope
from agentctl.runtime.namespaces import escape_id, unescape_id

# Between an agent's escaped name and its incarnation in a sandbox's name: never in an
# escaped id (whose `~` is always followed by two hex digits).
INCARNATION_MARK = "~~"


@dataclass(frozen=True)
class SandboxKey:
    """The sandbox of one thread (`thread` set) or of the whole assistant (`thread` None),
    of one incarnation of the agent (`incarnation`: unique to its registration on the
    platform; None for an agent without one, e.g. under `agentctl dev`)."""

    assistant: str
    thread: str | None = None
    incarnation: str | None = None

    @property
    def scope(self) -> SandboxScope:
        return "assistant" if self.thread is None else "thread"

    @property
    def owner(self) -> str:
        """Whose sandbox it is: `<assistant>` or `<assistant>~~<incarnation>`, escaped."""
        return sandbox_owner(self.assistant, self.incarnation)

    @property
    def name(self) -> str:
        """A stable, path- and URL-safe name: `a.<owner>` or `t.<owner>.<thread>`."""
        if self.thread is None:
            return f"a.{self.owner}"
        return f"t.{self.owner}.{escape_id(self.thread)}"

    @classmethod
    def of_name(cls, name: str) -> SandboxKey | None:
        """The key `name` was made from (escaped ids hold no `.`); None for another name."""
        kind, _, ids = name.partition(".")
        parts = ids.split(".")
        if not all(parts) or (kind, len(parts)) not in (("a", 1), ("t", 2)):
            return None
        assistant, mark, incarnation = parts[0].partition(INCARNATION_MARK)
        if not assistant or (mark and not _INCARNATION.fullmatch(incarnation)):
            return None
        thread = unescape_id(parts[1]) if kind == "t" else None
        return cls(unescape_id(assistant), thread, incarnation or None)


_INCARNATION = re.compile(r"[A-Za-z0-9-]{1,64}")


def sandbox_owner(assistant: str, incarnation: str | None) -> str:
    """The part of a sandbox's name that says whose it is (`SandboxKey.owner`)."""
    if incarnation is not None and not _INCARNATION.fullmatch(incarnation):
        raise ValueError(f"incarnation {incarnation!r}: expected 1 to 64 of [A-Za-z0-9-]")
    escaped = escape_id(assistant)
    return escaped if incarnation is None else f"{escaped}{INCARNATION_MARK}{incarnation}"


class SandboxPool(Protocol):
    """A sandbox provider: the sandbox of each key, created on first use."""

    async def acquire(self, key: SandboxKey) -> SandboxBackendProtocol:
        """The sandbox of `key`, created (or re-created, after it expired) when needed.
        Raises a `UserError` saying what to fix when the provider cannot be used."""
        ...

    async def aclose(self) -> None: ...


def run_key(assistant: str, scope: SandboxScope, incarnation: str | None = None) -> SandboxKey:
    """The key of the running graph's sandbox: its thread's, or for a run without a thread
    (stateless), one of its own; `assistant` scope shares one across all threads."""
    if scope == "assistant":
        return SandboxKey(assistant, None, incarnation)
    configurable = get_config().get("configurable") or {}
    thread = configurable.get("thread_id") or configurable.get("run_id")
    if not thread:
        raise RuntimeError("a thread-scoped sandbox used outside a run")
    return SandboxKey(assistant, str(thread), incarnation)


class ScopedSandbox(SandboxBackendProtocol):  # type: ignore[misc]
    """The agent's sandbox backend: every call goes to the sandbox of the current run.

    The agent runs asynchronously, so only the async methods are served; the sync ones
    say so rather than block the event loop.
    """

    def __init__(
        self,
        pool: SandboxPool,
        assistant: str,
        scope: SandboxScope,
        incarnation: str | None = None,
    ) -> None:
        self._pool = pool
        self._assistant = assistant
        self._scope = scope
        self._incarnation = incarnation

    @property
    def id(self) -> str:
        return f"{self._scope}:{self._assistant}"

    async def _sandbox(self) -> SandboxBackendProtocol:
        return await self._pool.acquire(run_key(self._assistant, self._scope, self._incarnation))

    async def aexecute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        return await (await self._sandbox()).aexecute(command, timeout=timeout)

    async def als(self, path: str) -> LsResult:
        return await (await self._sandbox()).als(path)

    async def aread(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        return await (await self._sandbox()).aread(file_path, offset, limit)

    async def awrite(self, file_path: str, content: str) -> WriteResult:
        return await (await self._sandbox()).awrite(file_path, content)

    async def aedit(
        self, file_path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> EditResult:
        return await (await self._sandbox()).aedit(file_path, old_string, new_string, replace_all)

    async def adelete(self, file_path: str) -> DeleteResult:
        return await (await self._sandbox()).adelete(file_path)

    async def aglob(self, pattern: str, path: str | None = None) -> GlobResult:
        return await (await self._sandbox()).aglob(pattern, path)

    async def agrep(
        self, pattern: str, path: str | None = None, glob: str | None = None, **kwargs: Any
    ) -> GrepResult:
        return await (await self._sandbox()).agrep(pattern, path, glob, **kwargs)

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        uploaded: list[FileUploadResponse] = await (await self._sandbox()).aupload_files(files)
        return uploaded

    async def adownload_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        downloaded: list[FileDownloadResponse] = await (await self._sandbox()).adownload_files(
            paths
        )
        return downloaded

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        raise NotImplementedError("the agent's sandbox is used through its async methods")
