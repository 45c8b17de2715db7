"""The client side of the platform API: what `agentctl deploy`, `revisions` and `rollback`
send to a running `agentctl serve`, with errors a user can act on."""

from __future__ import annotations

import base64
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from agentctl.errors import RuntimeFailure, UserError

PLATFORM_URL = "PLATFORM_URL"


@dataclass(frozen=True)
class PlatformClient:
    """The platform API of a `serve` cluster (`/platform/...`), as `agentctl deploy` calls it
    with the deployment key."""

    url: str
    api_key: str
    timeout: float = 120.0  # loading a revision connects to its MCP servers

    def upload(self, archive: bytes, secrets: Mapping[str, str]) -> dict[str, Any]:
        body = {"archive": base64.b64encode(archive).decode(), "secrets": dict(secrets)}
        return self._call("POST", "/platform/revisions", json=body)  # type: ignore[no-any-return]

    def revisions(self, limit: int = 20) -> list[dict[str, Any]]:
        return self._call("GET", "/platform/revisions", params={"limit": limit})  # type: ignore[no-any-return]

    def activate(self, number: int) -> dict[str, Any]:
        return self._call("POST", f"/platform/revisions/{number}/activate")  # type: ignore[no-any-return]

    def wait_live(
        self,
        number: int,
        *,
        agent_url: str | None = None,
        timeout: float = 30.0,
        confirmations: int = 6,
    ) -> bool:
        """Wait until `confirmations` answers of `/info` in a row (spread over the replicas
        behind the load balancer) serve revision `number`, at `agent_url` (the agent's base
        URL on the platform) or the platform's; False on timeout."""
        deadline = time.monotonic() + timeout
        seen = 0
        with httpx.Client(base_url=agent_url or self.url, timeout=5.0) as client:
            while time.monotonic() < deadline:
                try:
                    info = client.get("/info").json()
                except (httpx.HTTPError, ValueError):
                    info = {}
                seen = seen + 1 if info.get("revision_number") == number else 0
                if seen >= confirmations:
                    return True
                time.sleep(0.05 if seen else 0.2)
        return False

    def _call(self, method: str, path: str, **options: Any) -> Any:
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
        if response.status_code == 404 and path.startswith("/platform/revisions/"):
            number = path.split("/")[3]
            raise UserError(f"there is no revision {number} — `agentctl revisions` lists them")
        if response.status_code == 404:
            raise UserError(
                f"{self.url} has no platform API ({_detail(response)}) — "
                f"{PLATFORM_URL} must be the URL of an `agentctl serve` deployment"
            )
        if 400 <= response.status_code < 500:
            raise UserError(f"the platform refused the revision: {_detail(response)}")
        if response.status_code >= 500:
            raise RuntimeFailure(
                f"the platform failed ({response.status_code}): {_detail(response)}"
            )
        return response.json()


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json()["detail"])
    except (ValueError, KeyError, TypeError):
        return response.text.strip()[:200] or response.reason_phrase
