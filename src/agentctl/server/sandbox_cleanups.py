"""The sandboxes of deleted agents, on the platform sandbox service.

Deleting an agent removes every sandbox of its incarnation (`SandboxKey.owner`: thread and
assistant ones). What cannot be removed then (the service does not answer, or a sandbox
still runs a command) stays to do in a durable cleanup (`platform_sandbox_cleanups`, in the
default storage, written before the agent is forgotten) that every replica retries every
`RETRY_SECONDS` until the service answers; the delete says so, and so do the logs.

An agent created again under the same name never waits for it, and never gets the old
sandboxes: it is a new incarnation, and its sandboxes are named with it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentctl.aio import stop_task
from agentctl.errors import AgentctlError
from agentctl.sandbox import Sandboxes, open_sandboxes
from agentctl.sandbox.base import SandboxKey, sandbox_owner
from agentctl.settings import SandboxSettings, Settings
from agentctl.storage.base import AgentRecord, AgentRegistry, SandboxCleanup
from agentctl.storage.namespace import Namespace
from agentctl.storage.outages import outages, service_down

log = logging.getLogger("agentctl.platform")

RETRY_SECONDS = 5.0
# A cleanup its deletion never tried (the deleting replica died meanwhile) is retried by
# the others once this old; until then the deletion may still be closing the agent.
ABANDONED_SECONDS = 600.0


@dataclass(frozen=True)
class Cleaned:
    """What one attempt removed (sandbox names), and why the rest is still to do."""

    removed: list[str]
    pending: str | None = None

    def view(self) -> dict[str, Any]:
        return {"removed": self.removed, "pending": self.pending}


class SandboxJanitor:
    """Removes the sandboxes of deleted agents, now or, failing that, later."""

    def __init__(self, settings: Settings, registry: AgentRegistry) -> None:
        self.settings = settings
        self.registry = registry
        # Listing and removing run no command: the client's own answer time is enough.
        self.sandbox_settings = dataclasses.replace(SandboxSettings.from_env(), timeout_seconds=0)
        self._task: asyncio.Task[None] | None = None

    @property
    def shared(self) -> bool:
        """Whether the sandboxes run on a service the replicas share (else each replica
        runs its own, in process)."""
        return bool(self.sandbox_settings.url)

    async def request(self, record: AgentRecord) -> SandboxCleanup:
        """Note, durably, that the sandboxes of `record`'s incarnation are to be removed."""
        cleanup = SandboxCleanup(sandbox_owner(record.name, record.incarnation), record.name)
        await self.registry.request_cleanup(cleanup)
        return cleanup

    async def attempt(self, cleanup: SandboxCleanup) -> Cleaned:
        """Remove the sandboxes of `cleanup` and forget it; if some cannot be removed, note
        why (the cleanup stays, to be retried)."""
        folder = Namespace.of(cleanup.agent).folder(Path(self.settings.data_dir))
        sandboxes = open_sandboxes(self.sandbox_settings, folder, self.settings.platform_api_key)
        removed: list[str] = []
        try:
            await remove_sandboxes_of(sandboxes, cleanup.owner, removed)
        except Exception as exc:  # whatever it is, the delete goes through and says so
            reason = str(exc) if isinstance(exc, AgentctlError) else repr(exc)
            await self.registry.cleanup_failed(cleanup.owner, reason)
            self._failed(cleanup, reason, removed)
            return Cleaned(removed, reason)
        finally:
            await sandboxes.aclose()
        await self.registry.cleanup_done(cleanup.owner)
        after = f" after {cleanup.attempts} failed attempts" if cleanup.attempts else ""
        log.info("removed %d sandboxes of deleted agent %r%s: %s", len(removed), cleanup.agent,
                 after, ", ".join(removed) or "none left")  # fmt: skip
        return Cleaned(removed)

    def _failed(self, cleanup: SandboxCleanup, reason: str, removed: list[str]) -> None:
        """Logged as a warning when it first fails, or fails otherwise than before."""
        level = logging.DEBUG if reason == cleanup.last_error else logging.WARNING
        log.log(level, "sandboxes of deleted agent %r not all removed yet (%d removed): %s — "
                "retried every %.0f s until the sandbox service answers", cleanup.agent,
                len(removed), reason, RETRY_SECONDS)  # fmt: skip

    # -- retried in the background ----------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.create_task(self._retry_often(), name="sandbox-cleanups")

    async def stop(self) -> None:
        await stop_task(self._task)

    async def _retry_often(self) -> None:
        while True:
            await asyncio.sleep(RETRY_SECONDS)
            try:
                await self.retry()
            except Exception as exc:  # the next round tries again
                service = service_down(exc)
                if service is not None:
                    outages.down(service, exc)
                else:
                    log.warning("retrying the sandbox cleanups of deleted agents failed: %r", exc)

    async def retry(self) -> None:
        """Attempt each cleanup still to do, but those of a registered agent (its deletion
        did not go through) and those its deletion has not attempted yet."""
        cleanups = await self.registry.cleanups()
        if not cleanups:
            return
        registered = await self.registry.list()
        live = {sandbox_owner(record.name, record.incarnation) for record in registered}
        for cleanup in cleanups:
            age = time.time() - cleanup.requested_at.timestamp()
            if cleanup.owner in live or (cleanup.attempts == 0 and age < ABANDONED_SECONDS):
                continue
            await self.attempt(cleanup)


async def remove_sandboxes_of(sandboxes: Sandboxes, owner: str, removed: list[str]) -> None:
    """Remove every sandbox of `owner` (`SandboxKey.owner`), adding each one's name to
    `removed`. Raises the service's error (e.g. `SandboxUnavailable`) when one cannot be."""
    for info in await sandboxes.list_sandboxes():
        key = SandboxKey.of_name(info.name)
        if key is not None and key.owner == owner and await sandboxes.delete(info.name):
            removed.append(info.name)
