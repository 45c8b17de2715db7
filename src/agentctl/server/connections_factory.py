"""The users' connections of a revision (`agentctl.connections.Connections`), built where
the server loads it: with the agent's storage, the operator's sealing key and the agent's
public base URL (the provider sends browsers back to `<base>/connections/callback`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx

from agentctl.connections.sealing import TokenBox
from agentctl.errors import UserError
from agentctl.project.model import Project
from agentctl.server.access import CONNECT_CALLBACK
from agentctl.storage.base import Storage

if TYPE_CHECKING:
    from agentctl.connections.vault import Connections

TIMEOUT = httpx.Timeout(30.0)


@dataclass
class ConnectionsFactory:
    """Builds each revision's `Connections` on one agent's storage; one HTTP client for all
    of them, closed with the server (`aclose`)."""

    storage: Storage
    keys: tuple[str, ...]  # the sealing keys (`agentctl.sealing.key_material`)
    public_base: str | None  # None: unknown (`serve` without AGENTCTL_PUBLIC_URL)
    _http: httpx.AsyncClient | None = field(default=None, init=False, repr=False)

    def of(self, project: Project) -> Connections | None:
        """The connections of `project`; None when it has no user-owned server. Raises a
        `UserError` when it has some but the server has no public URL to be called back at."""
        from agentctl.connections.vault import Connections

        servers = project.user_owned_servers
        if not servers:
            return None
        if self.public_base is None:
            raise UserError(
                f'mcp.json: {", ".join(sorted(servers))}: user-owned servers ("oauth") send '
                "each user to their provider and back to this server, which needs its public "
                "address — set AGENTCTL_PUBLIC_URL to the URL browsers reach the server at "
                "(e.g. https://agents.example.com)"
            )
        if not self.keys:
            raise UserError(
                f"mcp.json: {', '.join(sorted(servers))}: users' tokens for user-owned servers "
                "are sealed with the operator's key — set AGENTCTL_SECRETS_KEY (or "
                "PLATFORM_API_KEY)"
            )
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False)
        return Connections(
            self.storage.connections,
            TokenBox(self.keys),
            servers,
            project.env,
            callback_url=self.public_base + CONNECT_CALLBACK,
            base_url=self.public_base,
            client_name=f"agentctl: {project.name}",
            http=self._http,
        )

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
