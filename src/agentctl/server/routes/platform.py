"""The platform API `agentctl deploy` talks to: upload a revision (with its secrets), list
revisions, activate one (roll back or forward). The deployment key (`x-api-key`) only."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from agentctl.errors import Forbidden, NotFound
from agentctl.platform.deployments import Deployments
from agentctl.server.access import AccessPolicy, caller_of
from agentctl.server.context import server_of
from agentctl.server.fields import Limit, Offset, RevisionNumber
from agentctl.server.openapi import NOT_FOUND
from agentctl.server.revision_views import (
    RevisionUpload,
    activate,
    revision_view,
    revisions_page,
)
from agentctl.server.schemas import RevisionOut
from agentctl.server.views import json_response

# Every route answers 404 on a server that takes no deploys (`agentctl dev`).
router = APIRouter(prefix="/platform", tags=["platform"], responses=NOT_FOUND)


def deployments_of(request: Request) -> Deployments[AccessPolicy]:
    """The server's deployments, for the operator only (404 first on a server that takes
    no deploys, which `/info` says to anyone)."""
    deployments = server_of(request).deployments
    if deployments is None:
        raise NotFound("this server takes no deploys (agentctl dev) — use agentctl serve")
    if not caller_of(request).operator:
        raise Forbidden("deploying needs the deployment key: send PLATFORM_API_KEY as x-api-key")
    return deployments


@router.post("/revisions", status_code=201, response_model=RevisionOut)
async def upload_revision(body: RevisionUpload, request: Request) -> Response:
    deployments = deployments_of(request)
    record = await deployments.upload(body.archive_bytes(), body.secrets)
    return json_response(revision_view(record, record.number), status=201)


@router.get("/revisions", response_model=list[RevisionOut])
async def list_revisions(
    request: Request,
    limit: Annotated[Limit, Query()] = 20,
    offset: Annotated[Offset, Query()] = 0,
) -> Response:
    return await revisions_page(deployments_of(request), limit, offset)


@router.get("/revisions/{number}", response_model=RevisionOut)
async def get_revision(number: RevisionNumber, request: Request) -> Response:
    deployments = deployments_of(request)
    record = await deployments.storage.revisions.get(number)
    if record is None:
        raise NotFound(f"there is no revision {number} — list them with GET /platform/revisions")
    return json_response(revision_view(record, await deployments.storage.revisions.active()))


@router.post("/revisions/{number}/activate", response_model=RevisionOut)
async def activate_revision(number: RevisionNumber, request: Request) -> Response:
    record = await activate(deployments_of(request), number)
    return json_response(revision_view(record, record.number))
