"""The partner sandbox providers: `sandbox_a` (Daytona), `sandbox_b` (Modal), `sandbox_c`
(Runloop), each through its `langchain-*` package.

Each `SandboxKey` maps to one partner sandbox. Its id is recorded in the langgraph store
(`record_location`), so every replica, and the server after a restart, finds it again; when
it is gone, a new one is created and recorded. `[sandbox].template` and `.image` mean:

    sandbox_a   the snapshot named `template` when it exists, else the registry `image`
    sandbox_b   the registry `image`, in the Modal app named `template`
    sandbox_c   the blueprint named `template`, built once `FROM image` when missing

The partner packages are imported by `partner_pool`, never when this module is.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

from deepagents.backends.protocol import SandboxBackendProtocol
from langgraph.store.base import BaseStore

from agentctl.bundle.dependencies import SANDBOX_PROVIDERS
from agentctl.errors import RuntimeFailure, UserError
from agentctl.project.model import SandboxConfig
from agentctl.sandbox.base import SandboxKey, SandboxPool
from agentctl.sandbox.isolation import SKILLS

log = logging.getLogger("agentctl.sandbox")

T = TypeVar("T")

RECHECK_SECONDS = 60.0  # a cached sandbox is asked for again (alive? restarted?) after this
_CREATE_TIMEOUT = 600  # seconds a partner may take to build and start a sandbox
_MODAL_LIFETIME = 24 * 3600  # Modal's longest sandbox lifetime (its default is 5 minutes)
_MODAL_IDLE = 30 * 60  # an idle Modal sandbox stops costing after this; a new one replaces it
_LABEL = "agentctl-sandbox"


def missing_credentials(provider: str, env: Mapping[str, str]) -> list[str]:
    """The variables `provider` needs that `env` lacks (an empty value counts as missing)."""
    return [name for name in SANDBOX_PROVIDERS[provider].env if not env.get(name)]


def check_credentials(provider: str, env: Mapping[str, str]) -> None:
    """Raise a `UserError` naming every missing credential and where to set it."""
    if missing := missing_credentials(provider, env):
        them = "them" if len(missing) > 1 else "it"
        raise UserError(
            f'[sandbox] provider "{provider}" needs {", ".join(missing)} — '
            f"set {them} in the project's .env"
        )


def record_location(provider: str, key: SandboxKey) -> tuple[tuple[str, ...], str]:
    """Where the store records the partner sandbox id of `key`: (namespace, key)."""
    return ("sandboxes", "partner", provider), key.name


def partner_pool(
    provider: str,
    config: SandboxConfig,
    env: Mapping[str, str],
    store: BaseStore,
    skills: Mapping[str, bytes] | None = None,
) -> SandboxPool:
    """The pool of `provider`'s sandboxes, each given `skills` (paths under `skills/`) in
    /memories/skills/. Raises a `UserError` when its package is not installed (checked
    first: it is the install step), then when credentials are missing."""
    adapter = _ADAPTERS.get(provider)
    if adapter is None:
        raise ValueError(f"not a partner sandbox provider: {provider!r}")
    package = SANDBOX_PROVIDERS[provider].packages[0]
    install = f"pip install '{package.requirement}'"
    if not package.installed():
        raise UserError(
            f'[sandbox] provider "{provider}" needs the package {package.name} — '
            f"install it: {install}"
        )
    try:
        module = importlib.import_module(package.module)
    except ImportError as exc:
        raise UserError(
            f'[sandbox] provider "{provider}": the package {package.name} fails to import '
            f"({exc}) — reinstall it: {install}"
        ) from exc
    check_credentials(provider, env)
    secrets = [env[name] for name in SANDBOX_PROVIDERS[provider].env]
    return PartnerPool(provider, adapter(module, config, env), store, secrets, skills or {})


class Partner:
    """One partner's SDK, in blocking calls that the pool runs in worker threads."""

    def __init__(self, package: ModuleType, config: SandboxConfig, env: Mapping[str, str]) -> None:
        self._package = package  # the langchain package: its backend class wraps a sandbox
        self._config = config
        self._lock = threading.Lock()
        self._opened: Any = None

    def connect(self, sandbox_id: str) -> SandboxBackendProtocol | None:
        """The sandbox `sandbox_id`, started again if it stopped; None when it is gone."""
        raise NotImplementedError

    def create(self, key: SandboxKey) -> SandboxBackendProtocol:
        """A new sandbox for `key`, running."""
        raise NotImplementedError

    def _open(self) -> Any:
        raise NotImplementedError

    def _client(self) -> Any:
        with self._lock:
            if self._opened is None:
                self._opened = self._open()
            return self._opened

    def close(self) -> None:
        with self._lock:
            client, self._opened = self._opened, None
        close = getattr(client, "close", None)
        if callable(close):
            close()


class _Daytona(Partner):
    def __init__(self, package: ModuleType, config: SandboxConfig, env: Mapping[str, str]) -> None:
        super().__init__(package, config, env)
        self._sdk = importlib.import_module("daytona")
        self._api_key = env["DAYTONA_API_KEY"]
        self._snapshot: bool | None = None  # does the snapshot named `template` exist?

    def _open(self) -> Any:
        return self._sdk.Daytona(self._sdk.DaytonaConfig(api_key=self._api_key))

    def connect(self, sandbox_id: str) -> SandboxBackendProtocol | None:
        try:
            sandbox = self._client().get(sandbox_id)
        except self._sdk.DaytonaNotFoundError:
            return None
        state = str(getattr(sandbox.state, "value", sandbox.state))
        if state in ("destroyed", "destroying", "error", "build_failed"):
            return None
        if state in ("stopped", "archived", "paused"):  # auto-stopped when idle: files kept
            sandbox.start(timeout=_CREATE_TIMEOUT)
        elif state != "started":
            sandbox.wait_for_sandbox_start(timeout=_CREATE_TIMEOUT)
        return self._package.DaytonaSandbox(sandbox=sandbox)

    def create(self, key: SandboxKey) -> SandboxBackendProtocol:
        client, labels = self._client(), {_LABEL: key.name}
        if self._snapshot is None:
            try:
                client.snapshot.get(self._config.template)
                self._snapshot = True
            except self._sdk.DaytonaNotFoundError:
                self._snapshot = False
        if self._snapshot:
            params = self._sdk.CreateSandboxFromSnapshotParams(
                snapshot=self._config.template, labels=labels
            )
        else:
            params = self._sdk.CreateSandboxFromImageParams(image=self._config.image, labels=labels)
        sandbox = client.create(params, timeout=_CREATE_TIMEOUT)
        return self._package.DaytonaSandbox(sandbox=sandbox)


class _Modal(Partner):
    def __init__(self, package: ModuleType, config: SandboxConfig, env: Mapping[str, str]) -> None:
        super().__init__(package, config, env)
        self._sdk = importlib.import_module("modal")
        self._token = (env["MODAL_TOKEN_ID"], env["MODAL_TOKEN_SECRET"])

    def _open(self) -> Any:
        return self._sdk.Client.from_credentials(*self._token)

    def connect(self, sandbox_id: str) -> SandboxBackendProtocol | None:
        try:
            sandbox = self._sdk.Sandbox.from_id(sandbox_id, client=self._client())
        except self._sdk.exception.NotFoundError:
            return None
        if sandbox.poll() is not None:  # it exited: timed out, idle, or terminated
            return None
        return self._package.ModalSandbox(sandbox=sandbox)

    def create(self, key: SandboxKey) -> SandboxBackendProtocol:
        client = self._client()
        app = self._sdk.App.lookup(self._config.template, create_if_missing=True, client=client)
        sandbox = self._sdk.Sandbox.create(
            app=app,
            image=self._sdk.Image.from_registry(self._config.image),
            timeout=_MODAL_LIFETIME,
            idle_timeout=_MODAL_IDLE,
            client=client,
        )
        return self._package.ModalSandbox(sandbox=sandbox)


class _Runloop(Partner):
    def __init__(self, package: ModuleType, config: SandboxConfig, env: Mapping[str, str]) -> None:
        super().__init__(package, config, env)
        self._api = importlib.import_module("runloop_api_client")
        self._sdk = importlib.import_module("runloop_api_client.sdk")
        self._api_key = env["RUNLOOP_API_KEY"]
        self._blueprint_lock = threading.Lock()
        self._blueprint_ready = False

    def _open(self) -> Any:
        return self._sdk.RunloopSDK(bearer_token=self._api_key)

    def connect(self, sandbox_id: str) -> SandboxBackendProtocol | None:
        runloop = self._client()
        try:
            status = runloop.api.devboxes.retrieve(sandbox_id).status
        except self._api.NotFoundError:
            return None
        if status in ("shutdown", "failure"):
            return None
        if status == "suspending":
            runloop.api.devboxes.await_suspended(sandbox_id)
        if status in ("suspending", "suspended"):  # suspended keeps the disk
            runloop.api.devboxes.resume(sandbox_id)
        return self._package.RunloopSandbox(devbox=runloop.devbox.from_id(sandbox_id))

    def create(self, key: SandboxKey) -> SandboxBackendProtocol:
        runloop, blueprint = self._client(), self._config.template
        with self._blueprint_lock:
            if not self._blueprint_ready:
                page = runloop.api.blueprints.list(name=blueprint, limit=100)
                if not any(
                    b.name == blueprint and b.status == "build_complete" for b in page.blueprints
                ):
                    runloop.api.blueprints.create_and_await_build_complete(
                        name=blueprint, dockerfile=f"FROM {self._config.image}\n"
                    )
                self._blueprint_ready = True
        devbox = runloop.devbox.create_from_blueprint_name(blueprint, name=key.name)
        return self._package.RunloopSandbox(devbox=devbox)


_ADAPTERS: dict[str, type[Partner]] = {
    "sandbox_a": _Daytona,
    "sandbox_b": _Modal,
    "sandbox_c": _Runloop,
}


@dataclass
class _Cached:
    sandbox: SandboxBackendProtocol
    checked: float  # time.monotonic() when the partner last confirmed it


class PartnerPool:
    """The sandboxes of one partner provider, one per key, found or created on `acquire`."""

    def __init__(
        self,
        provider: str,
        partner: Partner,
        store: BaseStore,
        secrets: Sequence[str] = (),
        skills: Mapping[str, bytes] | None = None,
    ) -> None:
        self._provider = provider
        self._skills = [(f"{SKILLS}/{path}", data) for path, data in (skills or {}).items()]
        self._partner = partner
        self._store = store
        self._secrets = [s for s in secrets if s]  # never shown in an error message
        self._locks: dict[str, asyncio.Lock] = {}
        self._cache: dict[str, _Cached] = {}

    async def acquire(self, key: SandboxKey) -> SandboxBackendProtocol:
        async with self._locks.setdefault(key.name, asyncio.Lock()):
            cached = self._cache.get(key.name)
            if cached and time.monotonic() - cached.checked < RECHECK_SECONDS:
                return cached.sandbox
            namespace, name = record_location(self._provider, key)
            item = await self._store.aget(namespace, name)
            recorded = item.value.get("id") if item else None
            sandbox = None
            if isinstance(recorded, str):
                sandbox = await self._call(self._partner.connect, recorded)
            if sandbox is None:
                created = await self._call(self._partner.create, key)
                await self._store.aput(namespace, name, {"id": created.id}, index=False)
                sandbox = created
            if cached is None or cached.sandbox.id != sandbox.id:  # new to this revision
                await self._sync_skills(sandbox, key)
            self._cache[key.name] = _Cached(sandbox, time.monotonic())
            return sandbox

    async def _sync_skills(self, sandbox: SandboxBackendProtocol, key: SandboxKey) -> None:
        """The revision's skill files, where the agent's instructions say they are."""
        if not self._skills:
            return
        uploaded = await sandbox.aupload_files(self._skills)
        failed = [f"{r.path} ({r.error})" for r in uploaded if r.error]
        if failed:
            log.warning("sandbox %s: skill files not copied in: %s", key.name, ", ".join(failed))

    async def aclose(self) -> None:
        """Release the partner's client. Sandboxes are kept: assistant-scoped ones persist."""
        self._cache.clear()
        await asyncio.to_thread(self._partner.close)

    async def _call(self, call: Callable[[Any], T], arg: Any) -> T:
        try:
            return await asyncio.to_thread(call, arg)
        except Exception as exc:
            detail = " ".join(str(exc).split())
            for secret in self._secrets:
                detail = detail.replace(secret, "***")
            detail = detail[:300] or "no details"
            raise RuntimeFailure(
                f'[sandbox] provider "{self._provider}" failed: {type(exc).__name__}: {detail}'
            ) from exc
