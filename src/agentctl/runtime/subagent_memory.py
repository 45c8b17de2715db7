"""`/memories/subagents/S/`: one folder over two namespaces.

Its `AGENTS.md` and `skills/**` are the subagent's seeds, the same for everyone and read-only;
every other path is the signed-in user's own (`memory.UserMemoryBackend`). A listing, glob or
grep merges both, each side showing only its own paths, so a seed can never be shadowed by a
user's file nor a stray file of the seeds' namespace shown to anyone.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

from deepagents.backends.protocol import (
    BackendProtocol,
    DeleteResult,
    EditResult,
    FileDownloadResponse,
    FileInfo,
    FileUploadResponse,
    GlobResult,
    GrepResult,
    LsResult,
    ReadResult,
    WriteResult,
)

SEED_FILE = "/AGENTS.md"
SEED_FOLDER = "/skills"
READ_ONLY = (
    "Error: permission denied for write on {path}: a subagent's AGENTS.md and skills come "
    "from the project and are read-only"
)


def is_seed(path: str) -> bool:
    """Whether `path` (within the folder) is one of the seeds' paths."""
    normal = posixpath.normpath("/" + path.lstrip("/"))
    return normal in (SEED_FILE, SEED_FOLDER) or normal.startswith(SEED_FOLDER + "/")


def _entry_is_seed(info: FileInfo) -> bool:
    return is_seed(info.get("path", "").rstrip("/") or "/")


class SubagentMemoryBackend(BackendProtocol):  # type: ignore[misc]
    def __init__(self, seeds: BackendProtocol, own: BackendProtocol) -> None:
        self._seeds = seeds
        self._own = own

    def _side(self, path: str) -> BackendProtocol:
        return self._seeds if is_seed(path) else self._own

    # -- reads ---------------------------------------------------------------------------

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        return self._side(file_path).read(file_path, offset, limit)

    async def aread(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        return await self._side(file_path).aread(file_path, offset, limit)

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        return [self._side(path).download_files([path])[0] for path in paths]

    async def adownload_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        return [(await self._side(path).adownload_files([path]))[0] for path in paths]

    def ls(self, path: str) -> LsResult:
        return _merge_ls(self._seeds.ls(path), self._own.ls(path))

    async def als(self, path: str) -> LsResult:
        return _merge_ls(await self._seeds.als(path), await self._own.als(path))

    def glob(self, pattern: str, path: str | None = None) -> GlobResult:
        return _merge_glob(self._seeds.glob(pattern, path), self._own.glob(pattern, path))

    async def aglob(self, pattern: str, path: str | None = None) -> GlobResult:
        seeds = await self._seeds.aglob(pattern, path)
        return _merge_glob(seeds, await self._own.aglob(pattern, path))

    def grep(
        self, pattern: str, path: str | None = None, glob: str | None = None, **kwargs: Any
    ) -> GrepResult:
        return _merge_grep(
            self._seeds.grep(pattern, path, glob, **kwargs),
            self._own.grep(pattern, path, glob, **kwargs),
            kwargs.get("max_count"),
        )

    async def agrep(
        self, pattern: str, path: str | None = None, glob: str | None = None, **kwargs: Any
    ) -> GrepResult:
        return _merge_grep(
            await self._seeds.agrep(pattern, path, glob, **kwargs),
            await self._own.agrep(pattern, path, glob, **kwargs),
            kwargs.get("max_count"),
        )

    # -- writes: the user's side only ------------------------------------------------------

    def write(self, file_path: str, content: str) -> WriteResult:
        if is_seed(file_path):
            return WriteResult(error=READ_ONLY.format(path=file_path))
        return self._own.write(file_path, content)

    async def awrite(self, file_path: str, content: str) -> WriteResult:
        if is_seed(file_path):
            return WriteResult(error=READ_ONLY.format(path=file_path))
        return await self._own.awrite(file_path, content)

    def edit(self, file_path: str, old: str, new: str, replace_all: bool = False) -> EditResult:
        if is_seed(file_path):
            return EditResult(error=READ_ONLY.format(path=file_path))
        return self._own.edit(file_path, old, new, replace_all)

    async def aedit(
        self, file_path: str, old: str, new: str, replace_all: bool = False
    ) -> EditResult:
        if is_seed(file_path):
            return EditResult(error=READ_ONLY.format(path=file_path))
        return await self._own.aedit(file_path, old, new, replace_all)

    def delete(self, file_path: str) -> DeleteResult:
        if is_seed(file_path):
            return DeleteResult(error=READ_ONLY.format(path=file_path))
        return self._own.delete(file_path)

    async def adelete(self, file_path: str) -> DeleteResult:
        if is_seed(file_path):
            return DeleteResult(error=READ_ONLY.format(path=file_path))
        return await self._own.adelete(file_path)

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        mine = [(path, data) for path, data in files if not is_seed(path)]
        return _in_order(files, self._own.upload_files(mine) if mine else [])

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        mine = [(path, data) for path, data in files if not is_seed(path)]
        return _in_order(files, await self._own.aupload_files(mine) if mine else [])


def _in_order(
    files: list[tuple[str, bytes]], uploaded: Sequence[FileUploadResponse]
) -> list[FileUploadResponse]:
    """One answer per file, in order: the seeds' paths refused, the others as uploaded."""
    answers = iter(uploaded)
    return [
        FileUploadResponse(path=path, error="permission_denied") if is_seed(path) else next(answers)
        for path, _ in files
    ]


def _split(seeds: Sequence[FileInfo], own: Sequence[FileInfo]) -> list[FileInfo]:
    merged = {info["path"]: info for info in own if not _entry_is_seed(info)}
    merged.update((info["path"], info) for info in seeds if _entry_is_seed(info))
    return sorted(merged.values(), key=lambda info: info["path"])


def _merge_ls(seeds: LsResult, own: LsResult) -> LsResult:
    if seeds.error or own.error:
        return seeds if seeds.error else own
    return LsResult(entries=_split(seeds.entries or [], own.entries or []))


def _merge_glob(seeds: GlobResult, own: GlobResult) -> GlobResult:
    if seeds.error or own.error:
        return seeds if seeds.error else own
    return GlobResult(
        matches=_split(seeds.matches or [], own.matches or []),
        truncated=seeds.truncated or own.truncated,
        truncation_reason=seeds.truncation_reason or own.truncation_reason,
    )


def _merge_grep(seeds: GrepResult, own: GrepResult, max_count: int | None) -> GrepResult:
    if seeds.error or own.error:
        return seeds if seeds.error else own
    matches = [m for m in seeds.matches or [] if is_seed(m["path"])]
    matches += [m for m in own.matches or [] if not is_seed(m["path"])]
    truncated = (
        seeds.truncated or own.truncated or (max_count is not None and len(matches) > max_count)
    )
    return GrepResult(matches=matches[:max_count], truncated=truncated)
