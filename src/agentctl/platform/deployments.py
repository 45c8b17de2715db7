"""The server side of `agentctl deploy`: a revision is checked, loaded, stored with its
secrets sealed, and activated; every replica then loads it and switches new runs to it.

A revision is data (config, prompts, skills, MCP definitions), so a deploy takes seconds:
no image is built. Runs in flight finish on the revision they started on.

A revision's variables are its own deployed secrets and nothing else: not the server's
environment, not another revision's. They are handed to its runtime (`project.env`) and
never written to the process environment.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from agentctl.bundle.limits import RevisionLimits
from agentctl.bundle.requirements import install_command, requirements_of
from agentctl.bundle.revision import (
    MANIFEST_FILE,
    canonical,
    deployed_variables,
    extract_revision,
    hash_archive,
)
from agentctl.errors import AgentctlError, RevisionRefused
from agentctl.platform.secrets import SecretBox
from agentctl.project import load_project
from agentctl.project.model import Project
from agentctl.runtime import load_agent
from agentctl.runtime.agent import AgentRuntime
from agentctl.runtime.peers import Peers
from agentctl.runtime.user_tools import ConnectionsSource
from agentctl.sandbox import Sandboxes
from agentctl.storage.base import Message, NewRevision, RevisionRecord, Storage

log = logging.getLogger("agentctl.platform")

# The server's access policy: the deployments hand it over from `access_for` unlooked-at.
Access = TypeVar("Access")
AccessIn = TypeVar("AccessIn", contravariant=True)


class AgentHost(Protocol[AccessIn]):
    """What the deployments need of the server that serves the agent."""

    storage: Storage
    sandboxes: Sandboxes | None
    peers: Peers | None
    # The agent's incarnation on the platform, which names its sandboxes.
    incarnation: str | None

    @property
    def connections(self) -> ConnectionsSource | None:
        """Its revisions' users' connections to user-owned MCP servers."""

    async def switch(
        self, runtime: AgentRuntime, access: AccessIn, number: int | None = None
    ) -> None:
        """Serve `runtime` (revision `number`) to new runs under `access`."""


@dataclass(frozen=True)
class Loaded:
    record: RevisionRecord
    runtime: AgentRuntime


class Deployments(Generic[Access]):
    """Revisions of one deployment, as seen by one replica of `server`.

    `access_for(project)` gives the access policy a revision asks for; a revision larger
    than `limits` is refused before it is unpacked."""

    def __init__(
        self,
        server: AgentHost[Access],
        box: SecretBox,
        data_dir: Path,
        *,
        access_for: Callable[[Project], Access],
        limits: RevisionLimits,
    ) -> None:
        self.server = server
        self.limits = limits
        self.storage: Storage = server.storage
        self.box = box
        self.folder = data_dir / "revisions"
        self._access_for = access_for
        self.current: int | None = None
        # The revision this replica could not load when another one activated it, and why.
        self.refused: tuple[int, str] | None = None
        # Called when what this replica serves changes (a revision served, or refused).
        self.on_change: Callable[[], None] = lambda: None
        self._lock = asyncio.Lock()  # one revision is loaded at a time

    async def start(self) -> None:
        """Follow activations made by any replica, from the active revision on (one made
        while this replica was not listening yet included)."""
        self.storage.bus.subscribe("deploy", self._on_deploy)
        if await self.storage.bus.ready("deploy"):
            await self.follow_active()

    async def follow_active(self) -> None:
        """Serve the active revision, if this replica missed its activation (its bus was
        not listening); a revision it could not load is not tried again."""
        number = await self.storage.revisions.active()
        refused = None if self.refused is None else self.refused[0]
        if number is not None and number not in (self.current, refused):
            await self._on_deploy({"number": number})

    async def restore(self) -> None:
        """Serve the active revision, if there is one (at start)."""
        number = await self.storage.revisions.active()
        if number is not None:
            await self._use(await self._load(number))

    # -- deploying ---------------------------------------------------------------------

    async def upload(self, archive: bytes, secrets: Mapping[str, str]) -> RevisionRecord:
        """Check and load the revision in `archive`, store it and make it active.

        Raises `RevisionRefused` (or the loader's `UserError`) naming what is wrong: a
        damaged archive, a package this server lacks, a missing variable, a broken agent."""
        manifest = await asyncio.to_thread(verify_archive, archive, self.limits)
        used = deployed_variables(manifest)
        unknown = sorted(set(secrets) - set(used))
        if unknown:
            raise RevisionRefused(
                f"secrets {', '.join(unknown)} are not variables the revision uses "
                f"({', '.join(used) or 'none'}) — send only those"
            )
        async with self._lock:
            folder = await asyncio.to_thread(self._unpack, manifest["id"], archive)
            project = self._project(folder, secrets)
            requirements = requirements_of(project)
            missing = requirements.missing_packages()
            if missing:
                raise RevisionRefused(
                    "this server lacks packages the revision needs — install them on every "
                    f"replica (or use an image with them): {install_command(missing)}"
                )
            unset = [need.name for need in requirements.missing_env(project.env)]
            if unset:
                raise RevisionRefused(
                    f"the revision needs {', '.join(unset)}, which the deploy does not send — "
                    "add them to the project's .env (a revision gets only its own deployed "
                    "secrets, never the server's environment)"
                )
            runtime = await self._runtime(project, manifest["id"])
            sealed = self.box.seal(secrets)
            new = NewRevision(manifest["id"], manifest, archive, sealed, sorted(secrets))
            record = await self.storage.revisions.add(new)
            await self._activate(Loaded(record, runtime))
        log.info("revision %d (%s) deployed", record.number, record.revision_id[:12])
        return record

    async def activate(self, number: int) -> RevisionRecord:
        """Make a stored revision active again (a rollback, or forward)."""
        async with self._lock:
            loaded = await self._load(number)
            await self._activate(loaded)
        log.info("revision %d activated", number)
        return loaded.record

    async def _activate(self, loaded: Loaded) -> None:
        await self.storage.revisions.activate(loaded.record.number)
        await self._use(loaded)
        await self.storage.bus.publish("deploy", {"number": loaded.record.number})

    async def _use(self, loaded: Loaded) -> None:
        project = loaded.runtime.project
        await self.server.switch(loaded.runtime, self._access_for(project), loaded.record.number)
        self.current, self.refused = loaded.record.number, None
        self.on_change()

    async def _on_deploy(self, message: Message) -> None:
        number = int(message["number"])
        async with self._lock:
            if number == self.current or await self.storage.revisions.active() != number:
                return  # already here, or superseded meanwhile
            try:
                loaded = await self._load(number)
            except AgentctlError as exc:  # e.g. a package only the deploying replica has
                log.error("revision %d cannot be served by this replica: %s", number, exc)
                self.refused = (number, str(exc))
                self.on_change()
                return
            await self._use(loaded)
        log.info("switched to revision %d", number)

    # -- loading -----------------------------------------------------------------------

    async def _load(self, number: int) -> Loaded:
        record = await self.storage.revisions.get(number)
        payload = await self.storage.revisions.payload(number)
        if record is None or payload is None:
            raise RevisionRefused(f"there is no revision {number}")
        archive, sealed = payload
        secrets = self.box.open(sealed)
        folder = await asyncio.to_thread(self._unpack, record.revision_id, archive)
        project = self._project(folder, secrets)
        return Loaded(record, await self._runtime(project, record.revision_id))

    def _project(self, folder: Path, secrets: Mapping[str, str]) -> Project:
        """The revision in `folder`, whose variables (`project.env`) are `secrets` only."""
        return load_project(folder, environ=secrets, limits=self.limits)

    async def _runtime(self, project: Project, revision_id: str) -> AgentRuntime:
        connections = self.server.connections
        return await load_agent(
            project,
            revision_id,
            store=self.storage.store,
            checkpointer=self.storage.checkpointer,
            env=project.env,
            sandboxes=self.server.sandboxes,
            peers=self.server.peers,
            incarnation=self.server.incarnation,
            connections=None if connections is None else connections.of(project),
        )

    def _unpack(self, revision_id: str, archive: bytes) -> Path:
        """The revision's files in `data_dir/revisions/<id>/`, unpacked once."""
        target = self.folder / revision_id
        if target.is_dir():
            return target
        self.folder.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=self.folder))
        try:
            extract_revision(archive, staging, self.limits)
            staging.rename(target)
        except OSError:
            if not target.is_dir():  # not just another replica's process unpacking it too
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return target


def verify_archive(archive: bytes, limits: RevisionLimits) -> dict[str, Any]:
    """The manifest of a revision archive whose content matches its id and fits in
    `limits`; else refused."""
    raw, actual = hash_archive(archive, limits)
    if raw is None:
        raise RevisionRefused(f"the archive has no {MANIFEST_FILE}: build it with agentctl deploy")
    try:
        manifest: dict[str, Any] = json.loads(raw)
        claimed = manifest.pop("id")
        listed = {entry["path"]: entry["sha256"] for entry in manifest["files"]}
    except (ValueError, KeyError, TypeError):
        raise RevisionRefused(f"the archive's {MANIFEST_FILE} is not a revision manifest") from None
    if hashlib.sha256(canonical(manifest)).hexdigest() != claimed:
        raise RevisionRefused("the manifest does not match the revision id: the archive is damaged")
    if actual != listed:
        raise RevisionRefused("the archive's files do not match its manifest: it is damaged")
    manifest["id"] = claimed
    return manifest
