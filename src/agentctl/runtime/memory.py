"""The `/memories/` filesystem of an agent: store-backed routes, permissions and seeding.

| path                                       | main agent  | subagent S          | scope          |
|--------------------------------------------|-------------|---------------------|----------------|
| /memories/AGENTS.md, skills/**             | read        | none                | assistant      |
| /memories/user/**                          | read, write | none                | per user       |
| /memories/subagents/S/AGENTS.md, skills/** | read        | read (own S)        | per subagent   |
| /memories/subagents/S/** (everything else) | read        | read, write (own S) | per user and S |

Without a signed-in user, the per-user folders are empty and refuse writes.

The namespaces behind each route are in `agentctl.runtime.namespaces`.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from deepagents import FilesystemPermission
from deepagents.backends import CompositeBackend, StateBackend, StoreBackend
from deepagents.backends.protocol import (
    BackendProtocol,
    DeleteResult,
    EditResult,
    FileDownloadResponse,
    FileUploadResponse,
    GlobResult,
    GrepResult,
    LsResult,
    ReadResult,
    WriteResult,
)
from deepagents.backends.utils import create_file_data
from langchain.agents.middleware import AgentMiddleware
from langgraph.config import get_config
from langgraph.store.base import BaseStore

from agentctl.runtime.namespaces import (
    shared_namespace,
    subagent_seeds_namespace,
    user_namespace,
    user_subagent_namespace,
)
from agentctl.runtime.subagent_memory import SEED_FILE, SEED_FOLDER, SubagentMemoryBackend

MEMORIES = "/memories"
USER_ID_KEY = "graph_auth_user_id"  # in config["configurable"], set by the server
OPERATOR_KEY = "graph_auth_operator"  # in config["configurable"]: True for the operator's runs
USER_MEMORY_FILE = f"{MEMORIES}/user/AGENTS.md"
USER_MEMORY_KEY = "/AGENTS.md"  # its key in the user's namespace
NO_USER = "User memory is not available in this conversation: no user is signed in."
NO_SUBAGENT_USER = (
    "This subagent keeps no memory in this conversation: no user is signed in "
    "(its AGENTS.md and skills can still be read)."
)

T = TypeVar("T")


def current_user_id() -> str | None:
    """The authenticated user of the running graph, or None."""
    user = configurable().get(USER_ID_KEY)
    return user if isinstance(user, str) and user else None


def current_is_operator() -> bool:
    """Whether the running graph was started by the operator (the deployment key)."""
    return configurable().get(OPERATOR_KEY) is True


def in_run() -> bool:
    """Whether a graph is running here (a tool call), rather than a revision loading."""
    return _running_config() is not None


def configurable() -> dict[str, Any]:
    """The running graph's `configurable` (empty outside a run)."""
    configurable = (_running_config() or {}).get("configurable")
    return configurable if isinstance(configurable, dict) else {}


def _running_config() -> dict[str, Any] | None:
    """The config of the running graph; None outside one."""
    try:
        return dict(get_config())
    except RuntimeError:
        return None


class UserMemoryBackend(BackendProtocol):  # type: ignore[misc]
    """A folder in the signed-in user's own namespace (`namespace(user)`), e.g.
    `/memories/user/`; without a user, an empty, unwritable folder, so user memory is
    skipped with neither reads, writes nor errors (`no_user` answers a read or write)."""

    def __init__(self, namespace: Callable[[str], tuple[str, ...]], no_user: str) -> None:
        self._store = StoreBackend(namespace=lambda _: namespace(_user()))
        self._no_user = no_user

    def _pick(self, with_user: Callable[[], T], without: Callable[[], T]) -> T:
        return with_user() if current_user_id() else without()

    async def _apick(self, with_user: Callable[[], Awaitable[T]], without: Callable[[], T]) -> T:
        return await with_user() if current_user_id() else without()

    def ls(self, path: str) -> LsResult:
        return self._pick(lambda: self._store.ls(path), LsResult)

    async def als(self, path: str) -> LsResult:
        return await self._apick(lambda: self._store.als(path), LsResult)

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        return self._pick(
            lambda: self._store.read(file_path, offset, limit),
            lambda: ReadResult(error=self._no_user),
        )

    async def aread(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        return await self._apick(
            lambda: self._store.aread(file_path, offset, limit),
            lambda: ReadResult(error=self._no_user),
        )

    def write(self, file_path: str, content: str) -> WriteResult:
        return self._pick(
            lambda: self._store.write(file_path, content), lambda: WriteResult(error=self._no_user)
        )

    async def awrite(self, file_path: str, content: str) -> WriteResult:
        return await self._apick(
            lambda: self._store.awrite(file_path, content), lambda: WriteResult(error=self._no_user)
        )

    def edit(self, file_path: str, old: str, new: str, replace_all: bool = False) -> EditResult:
        return self._pick(
            lambda: self._store.edit(file_path, old, new, replace_all),
            lambda: EditResult(error=self._no_user),
        )

    async def aedit(
        self, file_path: str, old: str, new: str, replace_all: bool = False
    ) -> EditResult:
        return await self._apick(
            lambda: self._store.aedit(file_path, old, new, replace_all),
            lambda: EditResult(error=self._no_user),
        )

    def delete(self, file_path: str) -> DeleteResult:
        return self._pick(
            lambda: self._store.delete(file_path), lambda: DeleteResult(error=self._no_user)
        )

    async def adelete(self, file_path: str) -> DeleteResult:
        return await self._apick(
            lambda: self._store.adelete(file_path), lambda: DeleteResult(error=self._no_user)
        )

    def glob(self, pattern: str, path: str | None = None) -> GlobResult:
        return self._pick(lambda: self._store.glob(pattern, path), GlobResult)

    async def aglob(self, pattern: str, path: str | None = None) -> GlobResult:
        return await self._apick(lambda: self._store.aglob(pattern, path), GlobResult)

    def grep(
        self, pattern: str, path: str | None = None, glob: str | None = None, **kwargs: Any
    ) -> GrepResult:
        return self._pick(lambda: self._store.grep(pattern, path, glob, **kwargs), GrepResult)

    async def agrep(
        self, pattern: str, path: str | None = None, glob: str | None = None, **kwargs: Any
    ) -> GrepResult:
        return await self._apick(
            lambda: self._store.agrep(pattern, path, glob, **kwargs), GrepResult
        )

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        return self._pick(lambda: self._store.download_files(paths), lambda: _not_found(paths))

    async def adownload_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        return await self._apick(
            lambda: self._store.adownload_files(paths), lambda: _not_found(paths)
        )

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return self._pick(lambda: self._store.upload_files(files), lambda: _denied(files))

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return await self._apick(lambda: self._store.aupload_files(files), lambda: _denied(files))


def _user() -> str:
    user = current_user_id()
    if user is None:  # UserMemoryBackend checks first; this is a guard, not a path
        raise RuntimeError("user memory used without a user")
    return user


def _not_found(paths: list[str]) -> list[FileDownloadResponse]:
    return [FileDownloadResponse(path=p, error="file_not_found") for p in paths]


def _denied(files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
    return [FileUploadResponse(path=p, error="permission_denied") for p, _ in files]


def main_backend(
    assistant: str,
    subagents: Sequence[str],
    *,
    user_memory: bool,
    default: BackendProtocol | None = None,
) -> BackendProtocol:
    """The main agent's filesystem: `default` (the sandbox, if any; else thread scratch
    space) plus every `/memories/` route.

    The inner composite makes `ls`, `glob` and `grep` over `/memories/` merge its routes.
    """
    routes: dict[str, BackendProtocol] = {
        f"/subagents/{name}/": subagent_folder(assistant, name) for name in subagents
    }
    if user_memory:
        routes["/user/"] = UserMemoryBackend(partial(user_namespace, assistant), NO_USER)
    memories = CompositeBackend(
        default=StoreBackend(namespace=_fixed(shared_namespace(assistant))), routes=routes
    )
    return CompositeBackend(default=default or StateBackend(), routes={f"{MEMORIES}/": memories})


def subagent_backend(assistant: str, subagent: str | None) -> BackendProtocol:
    """A subagent's filesystem: thread scratch space and only its own memory folder."""
    routes: dict[str, BackendProtocol] = {}
    if subagent is not None:
        routes[f"{MEMORIES}/subagents/{subagent}/"] = subagent_folder(assistant, subagent)
    return CompositeBackend(default=StateBackend(), routes=routes)


def subagent_folder(assistant: str, subagent: str) -> SubagentMemoryBackend:
    """`/memories/subagents/<subagent>/`: its seeds, shared and read-only, over what it wrote
    for the signed-in user (nothing, and no writes, without one)."""
    return SubagentMemoryBackend(
        seeds=StoreBackend(namespace=_fixed(subagent_seeds_namespace(assistant, subagent))),
        own=UserMemoryBackend(
            lambda user: user_subagent_namespace(assistant, user, subagent), NO_SUBAGENT_USER
        ),
    )


def _fixed(namespace: tuple[str, ...]) -> Callable[[Any], tuple[str, ...]]:
    return lambda _: namespace


def _both(path: str) -> list[str]:
    """A folder and everything under it (a `/x/**` glob does not match `/x` itself)."""
    return [path, f"{path}/**"]


def main_permissions(*, user_memory: bool) -> list[FilesystemPermission]:
    """The main agent reads all of `/memories/` and writes only its user's folder, if any."""
    user = (
        [FilesystemPermission(operations=["write"], paths=_both(f"{MEMORIES}/user"), mode="allow")]
        if user_memory
        else []
    )
    return [
        *user,
        # Rules name routed paths only (`/memories/**`, not `/memories`): deepagents accepts
        # no others with a sandbox, and the bare `/memories` is not the store's anyway.
        FilesystemPermission(operations=["write"], paths=[f"{MEMORIES}/**"], mode="deny"),
    ]


def subagent_permissions(subagent: str | None) -> list[FilesystemPermission]:
    """A subagent reads its own folder and writes there, except its seeds (the first
    matching rule wins); the rest of `/memories/` is closed to it."""
    folder = f"{MEMORIES}/subagents/{subagent}"
    own = (
        [
            FilesystemPermission(
                operations=["write"],
                paths=[f"{folder}{SEED_FILE}", *_both(f"{folder}{SEED_FOLDER}")],
                mode="deny",
            ),
            FilesystemPermission(operations=["read", "write"], paths=_both(folder), mode="allow"),
        ]
        if subagent
        else []
    )
    return [
        *own,
        FilesystemPermission(operations=["read", "write"], paths=[f"{MEMORIES}/**"], mode="deny"),
    ]


def file_value(data: bytes) -> dict[str, Any]:
    """A store value for a file, the way deepagents' StoreBackend keeps it."""
    try:
        file: Any = create_file_data(data.decode("utf-8"))
    except UnicodeDecodeError:
        file = create_file_data(base64.b64encode(data).decode("ascii"), encoding="base64")
    return dict(file)


async def reseed(
    store: BaseStore,
    namespace: tuple[str, ...],
    files: dict[str, bytes],
    owned: Callable[[str], bool] = lambda key: True,
) -> None:
    """Write `files` (key: path within the route, e.g. `/AGENTS.md`) into `namespace`, and
    delete the keys the revision `owned` there before but no longer has; other keys stay.
    A file stored already with the same content is not written again (a restart of an
    unchanged project writes nothing: it starts on a full disk)."""
    stored = await _values(store, namespace)
    for key in {k for k in stored if owned(k)} - set(files):
        await store.adelete(namespace, key)
    for key, data in files.items():
        value = file_value(data)
        before = stored.get(key) or {}
        if (before.get("content"), before.get("encoding")) != (value["content"], value["encoding"]):
            await store.aput(namespace, key, value)


async def _values(store: BaseStore, namespace: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    values: dict[str, dict[str, Any]] = {}
    offset = 0
    while True:
        page = await store.asearch(namespace, limit=500, offset=offset)
        values.update((item.key, item.value) for item in page if item.namespace == namespace)
        if len(page) < 500:
            return values
        offset += 500


class SeedUserMemory(AgentMiddleware):  # type: ignore[misc]
    """On a user's first run, create their `/memories/user/AGENTS.md` from the template.

    Runs before the memory middleware loads the file; an existing file is never overwritten.
    """

    def __init__(self, assistant: str, template: str) -> None:
        super().__init__()
        self._assistant = assistant
        self._template = file_value(template.encode("utf-8"))

    def before_agent(self, state: Any, runtime: Any) -> None:
        user = current_user_id()
        if user is not None and runtime.store is not None:
            namespace = user_namespace(self._assistant, user)
            if runtime.store.get(namespace, USER_MEMORY_KEY) is None:
                runtime.store.put(namespace, USER_MEMORY_KEY, self._template)

    async def abefore_agent(self, state: Any, runtime: Any) -> None:
        user = current_user_id()
        if user is not None and runtime.store is not None:
            namespace = user_namespace(self._assistant, user)
            if await runtime.store.aget(namespace, USER_MEMORY_KEY) is None:
                await runtime.store.aput(namespace, USER_MEMORY_KEY, self._template)
