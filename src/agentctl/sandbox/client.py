"""The sandbox service of `agentctl sandbox-server`, used by a replica over HTTP."""

from __future__ import annotations

import base64
from typing import Any

import httpx

from agentctl.errors import (
    AgentctlError,
    RuntimeFailure,
    SandboxBusy,
    SandboxFull,
    SandboxNotFound,
    SandboxRefused,
    SandboxUnavailable,
)
from agentctl.sandbox.http import spec_json
from agentctl.sandbox.isolation import DEFAULT_OPTIONS, Finished, RunOptions
from agentctl.sandbox.service import SandboxInfo, SandboxSpec

SANDBOX_URL = "AGENTCTL_SANDBOX_URL"
# The service's errors, raised here again from the status it answered them with.
_ANSWERED: dict[int, type[AgentctlError]] = {
    error.status: error
    for error in (SandboxNotFound, SandboxBusy, SandboxRefused, SandboxUnavailable, SandboxFull)
}


class SandboxClient:
    """`Sandboxes` at `url`, authenticated with the deployment key."""

    def __init__(self, url: str, api_key: str, *, timeout: float) -> None:
        self.url = url.rstrip("/")
        # A command may take `timeout`; the answer gets a little more.
        self._http = httpx.AsyncClient(
            base_url=self.url, headers={"x-api-key": api_key}, timeout=timeout + 30
        )

    async def check(self, spec: SandboxSpec) -> None:
        await self._call("POST", "/sandboxes/check", json=spec_json(spec))

    async def ensure(self, name: str, spec: SandboxSpec) -> bool:
        response = await self._call("PUT", f"/sandboxes/{name}", json=spec_json(spec))
        return response.status_code == 201

    async def execute(
        self, name: str, command: str, options: RunOptions = DEFAULT_OPTIONS
    ) -> Finished:
        body: dict[str, Any] = {"command": command, "timeout": options.timeout}
        body["output_bytes"] = options.output_bytes
        if options.stdin is not None:
            body["stdin"] = base64.b64encode(options.stdin).decode()
        answer = (await self._call("POST", f"/sandboxes/{name}/execute", json=body)).json()
        return Finished(
            base64.b64decode(answer["output"]),
            answer["exit_code"],
            answer["truncated"],
            answer["stopped"],
        )

    async def delete(self, name: str) -> bool:
        try:
            await self._call("DELETE", f"/sandboxes/{name}")
        except SandboxNotFound:
            return False
        return True

    async def list_sandboxes(self) -> list[SandboxInfo]:
        return [SandboxInfo(**info) for info in (await self._call("GET", "/sandboxes")).json()]

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, path: str, **options: Any) -> httpx.Response:
        try:
            response = await self._http.request(method, path, **options)
        except httpx.HTTPError as exc:
            raise SandboxUnavailable(
                f"cannot reach the sandbox service at {self.url} ({type(exc).__name__}) — is "
                f"`agentctl sandbox-server` running there? Check {SANDBOX_URL}"
            ) from None
        if response.is_success:
            return response
        detail = _detail(response)
        if response.status_code == 401:
            raise RuntimeFailure(
                f"the sandbox service at {self.url} refused the deployment key: {detail} — "
                "start it with the same PLATFORM_API_KEY as the replicas"
            )
        if response.status_code == 404 and not _is_json(response):
            raise RuntimeFailure(
                f"{self.url} is not a sandbox service (404 for {path}) — check {SANDBOX_URL}"
            )
        error = _ANSWERED.get(response.status_code, RuntimeFailure)
        raise error(f"the sandbox service: {detail}")


def _is_json(response: httpx.Response) -> bool:
    return str(response.headers.get("content-type", "")).startswith("application/json")


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json()["detail"])
    except (ValueError, KeyError, TypeError):
        return f"status {response.status_code}"
