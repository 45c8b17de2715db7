"""`[sandbox] provider = "platform_sandbox"`: the agent's sandboxes on our own sandbox service.

`PlatformPool` creates each key's sandbox on first use (and again if it expired or the
service restarted); `PlatformSandbox` is the deepagents backend of one sandbox: `execute`
runs there, and deepagents builds the file tools on it; files go in and out with `cat`.
"""

from __future__ import annotations

import asyncio
import shlex
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar, cast

from deepagents.backends.protocol import (
    ExecuteResponse,
    FileDownloadResponse,
    FileOperationError,
    FileUploadResponse,
)
from deepagents.backends.sandbox import BaseSandbox

from agentctl.errors import SandboxFull, SandboxNotFound
from agentctl.sandbox.base import SandboxKey
from agentctl.sandbox.isolation import DEFAULT_OPTIONS, Finished, RunOptions
from agentctl.sandbox.service import Sandboxes, SandboxSpec

T = TypeVar("T")
FILE_BYTES = 64 << 20  # the largest file moved in or out by the file tools
_MISSING, _DIRECTORY, _DENIED = 3, 4, 5
_DOWNLOAD = (
    f'[ -e "$1" ] || exit {_MISSING}; [ -d "$1" ] && exit {_DIRECTORY}; '
    f'[ -r "$1" ] || exit {_DENIED}; exec cat -- "$1"'
)
_UPLOAD = (
    f'[ -d "$1" ] && exit {_DIRECTORY}; mkdir -p -- "$(dirname -- "$1")" 2>/dev/null; '
    f'cat > "$1" 2>/dev/null || exit {_DENIED}'
)
_ERRORS: dict[int | None, FileOperationError] = {
    _MISSING: "file_not_found",
    _DIRECTORY: "is_directory",
    _DENIED: "permission_denied",
}


class PlatformPool:
    def __init__(self, sandboxes: Sandboxes, spec: SandboxSpec) -> None:
        self.sandboxes = sandboxes
        self.spec = spec
        self._ready: dict[str, asyncio.Lock] = {}
        self._ensured: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def acquire(self, key: SandboxKey) -> PlatformSandbox:
        self._loop = asyncio.get_running_loop()
        await self._ensure(key.name)
        return PlatformSandbox(self, key.name)

    def blocking(self, call: Coroutine[Any, Any, T]) -> T:
        """Run `call` on the pool's event loop from a worker thread, and wait for it."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            assert self._loop is not None, "acquire() comes first"
            return asyncio.run_coroutine_threadsafe(call, self._loop).result()
        call.close()
        raise RuntimeError("a sync sandbox call on the event loop: use the async method")

    async def aclose(self) -> None:
        pass  # the sandboxes outlive the revision; the service is closed by its owner

    async def _ensure(self, name: str, *, again: bool = False) -> None:
        if name in self._ensured and not again:
            return
        async with self._ready.setdefault(name, asyncio.Lock()):
            if again or name not in self._ensured:
                await self.sandboxes.ensure(name, self.spec)
                self._ensured.add(name)

    async def run(self, name: str, command: str, options: RunOptions = DEFAULT_OPTIONS) -> Finished:
        """Run `command` in sandbox `name`, re-creating it once if it is gone."""
        for attempt in (1, 2):
            try:
                return await self.sandboxes.execute(name, command, options)
            except SandboxNotFound:
                if attempt == 2:
                    raise
                await self._ensure(name, again=True)
        raise AssertionError("unreachable")


class PlatformSandbox(BaseSandbox):  # type: ignore[misc]
    """One platform sandbox, as deepagents' file and shell tools use it (async only)."""

    def __init__(self, pool: PlatformPool, name: str) -> None:
        self._pool = pool
        self._name = name

    @property
    def id(self) -> str:
        return self._name

    async def aexecute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        finished = await self._pool.run(self._name, command, RunOptions(timeout=timeout))
        output = finished.output.decode("utf-8", "replace")
        if finished.truncated:
            output += f"\n[output truncated to its first {len(finished.output)} bytes]"
        if note := _why_stopped(finished):
            output += f"\n[the command was stopped: {note}]"
        return ExecuteResponse(output, finished.exit_code, finished.truncated)

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        responses = []
        for path, data in files:
            try:
                upload = _with_path(_UPLOAD, path)
                finished = await self._pool.run(self._name, upload, RunOptions(stdin=data))
            except SandboxFull as exc:  # the agent reads why: "Failed to write file ...: ..."
                responses.append(FileUploadResponse(path, cast(FileOperationError, str(exc))))
                continue
            code = finished.exit_code
            error = None if code == 0 else _ERRORS.get(code, "permission_denied")
            responses.append(FileUploadResponse(path=path, error=error))
        return responses

    async def adownload_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        responses = []
        for path in paths:
            download = _with_path(_DOWNLOAD, path)
            finished = await self._pool.run(
                self._name, download, RunOptions(output_bytes=FILE_BYTES)
            )
            if finished.exit_code == 0 and not finished.truncated:
                responses.append(FileDownloadResponse(path=path, content=finished.output))
            else:
                error = _ERRORS.get(finished.exit_code, "permission_denied")
                responses.append(FileDownloadResponse(path=path, error=error))
        return responses

    # deepagents runs a few operations (e.g. `adelete`) as sync calls in a worker thread.

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        return self._pool.blocking(self.aexecute(command, timeout=timeout))

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return self._pool.blocking(self.aupload_files(files))

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        return self._pool.blocking(self.adownload_files(paths))


def _with_path(script: str, path: str) -> str:
    return f"sh -c {shlex.quote(script)} sh {shlex.quote(path)}"


def _why_stopped(finished: Finished) -> str | None:
    """In words, what limit ended the command, if one did."""
    if finished.stopped:
        return finished.stopped
    killed_by = {
        128 + signal.SIGXCPU: "it used more than its CPU time limit",
        128 + signal.SIGXFSZ: "it wrote a file larger than the file size limit",
        128 + signal.SIGKILL: "it was killed (out of memory, or a limit was reached)",
    }
    return killed_by.get(finished.exit_code or 0)
