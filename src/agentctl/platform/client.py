"""The client side of the platform API: what `agentctl deploy`, `agents`, `revisions`,
`rollback` and `delete` send to a running `agentctl serve`, with errors a user can act on."""

from __future__ import annotations

import base64
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from agentctl.bundle.dependencies import PLATFORM_URL
from agentctl.errors import OlderPlatform, RuntimeFailure, UserError

__all__ = ["PLATFORM_URL", "PlatformClient"]


def _no_route(detail: str) -> bool:
    """Whether a 404's detail says the server has no route for the path (an older
    `agentctl serve`), rather than no such agent or revision."""
    return detail.startswith("no endpoint ") or detail == "Not Found"


@dataclass(frozen=True)
class PlatformClient:
    """The platform API of a `serve` cluster (`/platform/...`), as the CLI calls it with the
    deployment key."""

    url: str
    api_key: str
    timeout: float = 120.0  # loading a revision connects to its MCP servers

    def agent_url(self, name: str) -> str:
        """The agent's own deployment URL: the base URL the SDKs take."""
        return f"{self.url}/agents/{quote(name, safe='')}"

    def upload(self, archive: bytes, secrets: Mapping[str, str]) -> dict[str, Any]:
        body = {"archive": base64.b64encode(archive).decode(), "secrets": dict(secrets)}
        return self._call("POST", "/platform/revisions", json=body)  # type: ignore[no-any-return]

    def agents(self) -> list[dict[str, Any]]:
        """The platform's agents; OlderPlatform when it hosts one agent only."""
        return self._call("GET", "/platform/agents")  # type: ignore[no-any-return]

    def revisions(self, agent: str, limit: int = 20) -> list[dict[str, Any]]:
        path = f"/platform/agents/{quote(agent, safe='')}/revisions"
        return self._call("GET", path, params={"limit": limit}, agent=agent)  # type: ignore[no-any-return]

    def activate(self, agent: str, number: int) -> dict[str, Any]:
        path = f"/platform/agents/{quote(agent, safe='')}/revisions/{number}/activate"
        return self._call("POST", path, agent=agent, number=number)  # type: ignore[no-any-return]

    def delete(self, agent: str) -> dict[str, Any]:
        path = f"/platform/agents/{quote(agent, safe='')}"
        return self._call("DELETE", path, agent=agent)  # type: ignore[no-any-return]

    def wait_live(
        self, base: str, number: int, *, timeout: float = 30.0, confirmations: int = 6
    ) -> bool:
        """Wait until `confirmations` answers of `{base}/info` in a row (spread over the
        replicas behind the load balancer) serve revision `number`; False on timeout."""
        deadline = time.monotonic() + timeout
        seen = 0
        with httpx.Client(timeout=5.0) as client:
            while time.monotonic() < deadline:
                try:
                    info = client.get(f"{base}/info").json()
                except (httpx.HTTPError, ValueError):
                    info = {}
                seen = seen + 1 if info.get("revision_number") == number else 0
                if seen >= confirmations:
                    return True
                time.sleep(0.05 if seen else 0.2)
        return False

    def unknown_agent(self, agent: str) -> UserError:
        """The error for an agent the platform does not host, naming those it does."""
        names = sorted(item["name"] for item in self.agents())
        hosted = f"its agents: {', '.join(names)}" if names else "it hosts no agent yet"
        return UserError(
            f"the platform at {self.url} has no agent named {agent!r} ({hosted}) — "
            "`agentctl agents` lists them"
        )

    def _call(
        self, method: str, path: str, *, agent: str | None = None, number: int | None = None,
        **options: Any,
    ) -> Any:  # fmt: skip
        try:
            with httpx.Client(base_url=self.url, timeout=self.timeout) as client:
                response = client.request(
                    method, path, headers={"x-api-key": self.api_key}, **options
                )
        except httpx.HTTPError as exc:
            raise UserError(
                f"cannot reach the platform at {self.url} ({exc}) — is `agentctl serve` "
                f"running there? Check {PLATFORM_URL}"
            ) from None
        if response.status_code in (401, 403):
            raise UserError(
                f"the platform at {self.url} refused PLATFORM_API_KEY: {_detail(response)} — "
                "use the key the server was started with"
            )
        if response.status_code == 404:
            raise self._not_found(path, _detail(response), agent, number)
        if 400 <= response.status_code < 500:
            raise UserError(f"the platform refused the request: {_detail(response)}")
        if response.status_code >= 500:
            raise RuntimeFailure(
                f"the platform failed ({response.status_code}): {_detail(response)}"
            )
        return response.json()

    def _not_found(
        self, path: str, detail: str, agent: str | None, number: int | None
    ) -> Exception:
        """What a 404 means: no such route (an older server), agent or revision."""
        if _no_route(detail) and path.startswith("/platform/agents"):
            return OlderPlatform(
                f"the platform at {self.url} runs an older `agentctl serve` that hosts one "
                "agent and has no /platform/agents — upgrade the server to deploy and "
                "manage several agents"
            )
        if agent is None or _no_route(detail):
            return UserError(
                f"{self.url} has no platform API ({detail}) — "
                f"{PLATFORM_URL} must be the URL of an `agentctl serve` deployment"
            )
        if agent not in (item["name"] for item in self.agents()):
            return self.unknown_agent(agent)
        if number is not None:
            return UserError(
                f"agent {agent!r} has no revision {number} — "
                f"`agentctl revisions --agent {agent}` lists them"
            )
        return UserError(detail)


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json()["detail"])
    except (ValueError, KeyError, TypeError):
        return response.text.strip()[:200] or response.reason_phrase
