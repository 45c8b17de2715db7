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
    return path if isinstance(path, str) and path else UNMATCHED
