"""The sandbox service over HTTP: what `agentctl sandbox-server` serves, so that every
replica of a deployment uses the same sandboxes (`SandboxClient` is the other side).

    GET    /ok                          liveness, without the key
    GET    /sandboxes                   every sandbox, with when it was last used
    POST   /sandboxes/check             {image, template}: can such a sandbox run here?
    PUT    /sandboxes/{name}            {image, template, skills: {path: base64}}: create it
                                        if missing (201) and sync its skills (200)
    POST   /sandboxes/{name}/execute    {command, timeout?, stdin?, output_bytes?}
                                        -> {output (base64), exit_code, truncated, stopped}
    DELETE /sandboxes/{name}

Every call but `/ok` needs `x-api-key: PLATFORM_API_KEY`. Errors are `{"detail": ...}`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import asdict
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentctl.aio import stop_task
from agentctl.errors import AgentctlError, BadRequest
from agentctl.sandbox.isolation import RunOptions
from agentctl.sandbox.service import SandboxService, SandboxSpec

MAX_BODY = 128 << 20
MAX_OUTPUT = 64 << 20  # the most output one command may return (a file read whole)
DISCONNECT_CHECK = 0.5  # seconds between checks that the caller of a command still waits
Endpoint = Callable[[Request], Awaitable[Response]]


def sandbox_app(service: SandboxService, api_key: str) -> Starlette:
    def guarded(endpoint: Endpoint) -> Endpoint:
        async def call(request: Request) -> Response:
            given = request.headers.get("x-api-key", "")
            if not hmac.compare_digest(given.encode(), api_key.encode()):
                return _error(401, "send the deployment key (PLATFORM_API_KEY) as x-api-key")
            try:
                return await endpoint(request)
            except AgentctlError as exc:
                return _error(exc.status, str(exc))

        return call

    async def ok(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def listing(request: Request) -> Response:
        return JSONResponse([asdict(info) for info in await service.list_sandboxes()])

    async def check(request: Request) -> Response:
        await service.check(_spec(await _body(request)))
        return Response(status_code=204)

    async def ensure(request: Request) -> Response:
        created = await service.ensure(request.path_params["name"], _spec(await _body(request)))
        return JSONResponse({"created": created}, status_code=201 if created else 200)

    async def execute(request: Request) -> Response:
        body = await _body(request)
        command = body.get("command")
        if not isinstance(command, str):
            raise BadRequest("command: expected a string")
        output_bytes = body.get("output_bytes")
        if output_bytes is not None and (
            not isinstance(output_bytes, int) or not 0 < output_bytes <= MAX_OUTPUT
        ):
            raise BadRequest(f"output_bytes: expected a whole number from 1 to {MAX_OUTPUT}")
        options = RunOptions(
            timeout=_number(body, "timeout"),
            stdin=_base64(body["stdin"], "stdin") if body.get("stdin") is not None else None,
            output_bytes=output_bytes,
        )
        running = asyncio.ensure_future(
            service.execute(request.path_params["name"], command, options)
        )
        try:
            while not (await asyncio.wait({running}, timeout=DISCONNECT_CHECK))[0]:
                if await request.is_disconnected():  # the run was cancelled: so is the command
                    return Response(status_code=499)
        finally:
            if not running.done():
                await stop_task(running)
        finished = running.result()
        return JSONResponse(
            {
                "output": base64.b64encode(finished.output).decode(),
                "exit_code": finished.exit_code,
                "truncated": finished.truncated,
                "stopped": finished.stopped,
            }
        )

    async def delete(request: Request) -> Response:
        if not await service.delete(request.path_params["name"]):
            return _error(404, f"there is no sandbox {request.path_params['name']}")
        return Response(status_code=204)

    return Starlette(
        routes=[
            Route("/ok", ok),
            Route("/sandboxes", guarded(listing)),
            Route("/sandboxes/check", guarded(check), methods=["POST"]),
            Route("/sandboxes/{name}", guarded(ensure), methods=["PUT"]),
            Route("/sandboxes/{name}", guarded(delete), methods=["DELETE"]),
            Route("/sandboxes/{name}/execute", guarded(execute), methods=["POST"]),
        ],
        lifespan=_closing(service),
    )


def _closing(service: SandboxService) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await service.aclose()

    return lifespan


def spec_json(spec: SandboxSpec) -> dict[str, Any]:
    skills = {path: base64.b64encode(data).decode() for path, data in spec.skills.items()}
    return {"image": spec.image, "template": spec.template, "skills": skills}


def _spec(body: dict[str, Any]) -> SandboxSpec:
    skills = body.get("skills") or {}
    if not isinstance(skills, dict):
        raise BadRequest("skills: expected an object of path: base64 content")
    image, template = body.get("image", "python:3"), body.get("template", "agent-deploy")
    if not isinstance(image, str) or not isinstance(template, str):
        raise BadRequest("image and template: expected strings")
    files = {str(path): _base64(data, f"skills.{path}") for path, data in skills.items()}
    return SandboxSpec(image=image, template=template, skills=files)


async def _body(request: Request) -> dict[str, Any]:
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise BadRequest(f"the request body is larger than {MAX_BODY} bytes")
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, RecursionError):
        raise BadRequest("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    return body


def _base64(value: Any, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise BadRequest(f"{what}: expected base64") from None


def _number(body: dict[str, Any], key: str) -> Any:
    value = body.get(key)
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e9
    ):
        raise BadRequest(f"{key}: expected a number greater than 0")
    return value


def _error(status: int, detail: str) -> Response:
    return JSONResponse({"detail": detail}, status_code=status)
