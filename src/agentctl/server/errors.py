"""One place turns every failure into the JSON error the LangGraph clients read:
`{"detail": "..."}` with the right status. A user never sees a traceback.

Code raises an error of the tree (`agentctl.errors`), which carries its status; only the
errors of the web framework and unexpected exceptions are translated here."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match

from agentctl import serde
from agentctl.errors import AgentctlError, NotFound
from agentctl.server.connections import CutShort
from agentctl.storage.outages import (
    RETRY_AFTER_SECONDS,
    outage_errors,
    outages,
    service_down,
)

log = logging.getLogger("agentctl.server")

FASTAPI_UNPARSED = "There was an error parsing the body"
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def not_found(kind: str, key: str) -> NotFound:
    """The 404 of a resource looked up by key: `thread '<id>' not found`."""
    return NotFound(f"{kind} {key!r} not found")


def json_error(status: int, detail: str, headers: dict[str, str] | None = None) -> Response:
    return Response(
        serde.dumps({"detail": detail}),
        status_code=status,
        media_type="application/json",
        headers=headers,
    )


def _location(loc: tuple[Any, ...]) -> str:
    # The first part says where (a field may be named `query` or `body` too).
    kinds = ("body", "query", "path", "header")
    parts = [str(p) for p in (loc[1:] if loc and loc[0] in kinds else loc)]
    where = {"body": "body", "query": "query parameter", "path": "path parameter"}.get(
        str(loc[0]) if loc else "", "request"
    )
    return f"{where} {'.'.join(parts)}" if parts else where


def describe_validation(errors: list[dict[str, Any]]) -> str:
    messages = []
    for error in errors[:5]:
        if error.get("type") == "json_invalid":
            messages.append("the body is not valid JSON — send a JSON object")
            continue
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        messages.append(f"{_location(tuple(error.get('loc', ())))}: {message}")
    more = len(errors) - 5
    return "; ".join(messages) + (f" (and {more} more)" if more > 0 else "")


def allowed_methods(request: Request) -> str:
    """Every method some route of the app takes on the request's path (starlette's 405
    names only those of the first route that matched the path)."""
    allowed = [
        method
        for method in METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] == Match.FULL
            for route in request.app.router.routes
        )
    ]
    return ", ".join(allowed)


def install(app: FastAPI) -> None:
    async def validation_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return json_error(422, describe_validation(list(exc.errors())))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        status = exc.status_code
        if status == 404 and detail == "Not Found":
            detail = f"no endpoint {request.method} {request.url.path}"
        elif status == 400 and detail == FASTAPI_UNPARSED:  # e.g. nested past the parser's depth
            status, detail = 422, "the body could not be read as JSON (nested too deeply?)"
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            allowed = allowed_methods(request)
            detail = f"{request.method} is not allowed on {request.url.path} — use {allowed}"
            headers = {**(headers or {}), "Allow": allowed}
        return json_error(status, detail, headers)

    async def agentctl_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, AgentctlError)
        service = service_down(exc)  # e.g. the embedded database's full disk
        if service is not None:
            outages.down(service, exc)
            return json_error(exc.status, str(exc), {"Retry-After": str(RETRY_AFTER_SECONDS)})
        return json_error(exc.status, str(exc), getattr(exc, "headers", None))

    async def unexpected(request: Request, exc: Exception) -> Response:
        service = service_down(exc)
        if service is not None:
            outages.down(service, exc)
            return json_error(
                503,
                f"{service} is unavailable right now, so the request was not carried out — "
                f"retry in a few seconds",
                {"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        if not isinstance(exc, CutShort):  # cut on purpose: the response had begun
            log.exception("unexpected error on %s %s", request.method, request.url.path)
        return json_error(500, "internal server error — see the server log for details")

    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(AgentctlError, agentctl_error)
    for outage in outage_errors():  # answered here, not re-raised to the server's log
        app.add_exception_handler(outage, unexpected)
    app.add_exception_handler(Exception, unexpected)
