"""What the operator watches: every run in flight or queued, across threads and users, and
the sandboxes of the platform sandbox service. The operator's (the deployment key), or
anyone's on a server without `[auth]`; 403 for a signed-in user. Unlike the deploys of
`platform.py`, these answer on `agentctl dev` too."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from agentctl.sandbox.base import SandboxKey, sandbox_owner
from agentctl.sandbox.service import SandboxInfo
from agentctl.server import lookup
from agentctl.server.access import caller_of
from agentctl.server.context import server_of
from agentctl.server.fields import Limit, Offset
from agentctl.server.schemas import RunOut, SandboxesOut
from agentctl.server.views import json_response, page_headers, run_view

router = APIRouter(prefix="/platform", tags=["platform"])


@router.get("/runs", response_model=list[RunOut])
async def runs_in_flight(
    request: Request,
    status: Literal["pending", "running"] | None = None,
    limit: Annotated[Limit, Query()] = 100,
    offset: Annotated[Offset, Query()] = 0,
) -> Response:
    """Every pending (queued) and running run, oldest first, whoever's thread it is on;
    `status` keeps one of the two."""
    lookup.require_operator(caller_of(request), "list every run in flight")
    active = [
        run
        for run in await server_of(request).storage.runs.all_active()
        if status is None or run.status == status
    ]
    shown = active[offset : offset + limit]
    headers = page_headers(offset, limit, len(shown), len(active))
    return json_response([run_view(run) for run in shown], headers=headers)


@router.get("/sandboxes", response_model=SandboxesOut)
async def sandboxes(request: Request) -> Response:
    """The `[sandbox]` settings of the revision served, and every sandbox the platform
    sandbox service keeps (a partner provider's sandboxes live with that provider)."""
    lookup.require_operator(caller_of(request), "list the sandboxes")
    server = server_of(request)
    settings = None
    if server.deployment.ready:
        sandbox = server.deployment.runtime.project.sandbox
        settings = {
            "provider": sandbox.provider,
            "scope": sandbox.scope,
            "image": sandbox.image,
            "template": sandbox.template,
        }
    service = server.sandboxes
    listed = [] if service is None else await service.list_sandboxes()
    # The service may serve other agents and deployments too: only the sandboxes of the
    # agent served (keyed by its name and incarnation).
    agent = server.deployment.graph_id if server.deployment.ready else None
    owner = None if agent is None else sandbox_owner(agent, server.incarnation)
    shown = [
        _sandbox(box, key)
        for box in listed
        if (key := SandboxKey.of_name(box.name)) is not None and key.owner == owner
    ]
    return json_response({"settings": settings, "sandboxes": shown})


def _sandbox(box: SandboxInfo, key: SandboxKey) -> dict[str, Any]:
    return {
        "name": box.name,
        "scope": key.scope,
        "image": box.image,
        "template": box.template,
        "created_at": datetime.fromtimestamp(box.created_at, UTC),
        "last_used_at": datetime.fromtimestamp(box.last_used_at, UTC),
    }
