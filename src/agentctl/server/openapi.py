"""The OpenAPI document as the server behaves: every error is `{"detail": ...}` (never
FastAPI's validation list), each operation lists the 4xx statuses it can give, and ids
that must be UUIDs say so.

Which statuses an operation gives follows from its shape, once, here: 403 for any (a web
page or `Host` that is not allowed), 401 unless public, 404 with a path parameter or an
`assistant_id` to look up, 422 with any parameter or body, 408 and 413 with a body, 503 for
any (too many connections, or PostgreSQL or Redis not answering). What only a
route knows (409 on conflicts, 429 on budgets) it declares itself with `responses=CONFLICT`
or `STARTS_RUN`.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from agentctl.server.access import PUBLIC_PATHS
from agentctl.server.fields import UUID_PARAMS
from agentctl.server.schemas import ErrorOut, OkOut

ERROR_REF = {"$ref": "#/components/schemas/ErrorOut"}
CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorOut, "description": "Conflict with the record's current state"}
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "No such record"}
}
# A route that starts a run: a busy thread, or a budget spent (with `Retry-After`).
STARTS_RUN: dict[int | str, dict[str, Any]] = {
    **CONFLICT,
    429: {"model": ErrorOut, "description": "A budget of the user or of the agent is spent "
          "(`[budgets]`); `Retry-After` says in how many seconds it frees"},
}  # fmt: skip
UNAVAILABLE: dict[int | str, dict[str, Any]] = {
    503: {"model": OkOut, "description": "Not ready: stopping, or a service does not answer"}
}
DESCRIPTIONS = {
    "401": "No credentials, or credentials that are not valid",
    "403": "Not allowed: a web page or Host this server does not admit, or an operator's action",
    "404": "No such record (or one that belongs to another user)",
    "409": "Conflict with the record's current state",
    "408": "The request body was sent too slowly",
    "413": "The request body is over the size limit, or carries too many messages",
    "422": "A malformed body or parameter; the detail names the field",
    "429": "A budget is spent; `Retry-After` says in how many seconds it frees",
    "503": "Too many open connections, or a service the server needs does not answer",
}
_FASTAPI_ERRORS = ("HTTPValidationError", "ValidationError")


def _statuses(path: str, op: dict[str, Any], body: dict[str, Any] | None) -> set[str]:
    params = op.get("parameters", [])
    codes = {"403", *(code for code in op.get("responses", {}) if code.startswith("4"))}
    if path not in PUBLIC_PATHS:
        codes.add("401")
    names = {p["name"] for p in params} | set((body or {}).get("properties", {}))
    if any(p["in"] == "path" for p in params) or "assistant_id" in names:
        codes.add("404")
    if params or "requestBody" in op:
        codes.add("422")
    if "requestBody" in op:
        codes |= {"408", "413"}
    return codes | {"503"}


def _body_schema(op: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any] | None:
    schema = op.get("requestBody", {}).get("content", {}).get("application/json", {})
    schema = schema.get("schema", {})
    for ref in [schema, *schema.get("anyOf", [])]:
        if "$ref" in ref:
            found: dict[str, Any] = schemas[ref["$ref"].rsplit("/", 1)[1]]
            return found
    return None


def describe(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` (as FastAPI generates it) told as the server behaves."""
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for name in _FASTAPI_ERRORS:
        schemas.pop(name, None)
    schemas["ErrorOut"] = ErrorOut.model_json_schema()
    for path, item in doc.get("paths", {}).items():
        for op in item.values():
            for param in op.get("parameters", []):
                if param["in"] == "path" and param["name"] in UUID_PARAMS:
                    param["schema"]["format"] = "uuid"
            responses = op.setdefault("responses", {})
            for code in sorted(_statuses(path, op, _body_schema(op, schemas))):
                answer = responses.setdefault(code, {})
                if code == "503" and "content" in answer:
                    continue  # the route's own (`/ok` answers its readiness)
                answer["description"] = answer.get("description") or DESCRIPTIONS[code]
                if code == "422" or answer["description"] == "Validation Error":
                    answer["description"] = DESCRIPTIONS[code]
                answer["content"] = {"application/json": {"schema": ERROR_REF}}
    return doc


def install(app: FastAPI) -> None:
    """Serve `describe`'s document at the app's `openapi_url`, built once."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = describe(
                get_openapi(
                    title=app.title,
                    version=app.version,
                    description=app.description,
                    routes=app.routes,
                )
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
