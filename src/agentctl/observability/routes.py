"""The route template of a request (`/threads/{thread_id}/runs`), never its raw path: ids in
metric labels or span names would make a series (or a span name) per thread."""

from __future__ import annotations

from starlette.routing import Match
from starlette.types import Scope

UNMATCHED = "unmatched"


def route_template(scope: Scope) -> str:
    """The path template of the route that handled (or would handle) the request;
    `UNMATCHED` when no route matches it."""
    route = scope.get("route")
    if route is None:
        # Answered before routing (401, 413): find the route it was meant for.
        app = scope.get("app")
        for candidate in getattr(getattr(app, "router", None), "routes", ()):
            match, _ = candidate.matches(scope)
            if match is not Match.NONE:
                route = candidate
                break
    path = getattr(route, "path", None)
    if not (isinstance(path, str) and path):
        # FastAPI routes a plain Starlette route of an included router (`/mcp`) through
        # the router: the template is that of its route which matches.
        path = _inner_template(route, scope)
    return path if isinstance(path, str) and path else UNMATCHED


def _inner_template(router: object, scope: Scope) -> str | None:
    for candidate in getattr(getattr(router, "original_router", None), "routes", ()):
        match, _ = candidate.matches(scope)
        path = getattr(candidate, "path", None)
        if match is not Match.NONE and isinstance(path, str):
            return path
    return None
