"""The platform API `agentctl deploy` talks to: upload a revision (with its secrets), list
revisions, activate one (roll back or forward). The deployment key (`x-api-key`) only."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import Field
from starlette.responses import Response

from agentctl.errors import Forbidden, NotFound, Unprocessable
from agentctl.platform.deployments import Deployments
from agentctl.server.access import AccessPolicy, caller_of
from agentctl.server.context import server_of
from agentctl.server.fields import Body, Limit, Offset, RevisionNumber
from agentctl.server.openapi import NOT_FOUND
from agentctl.server.schemas import RevisionOut
from agentctl.server.views import json_response, page_headers
from agentctl.storage.base import RevisionRecord

# Every route answers 404 on a server that takes no deploys (`agentctl dev`).
router = APIRouter(prefix="/platform", tags=["platform"], responses=NOT_FOUND)


class RevisionUpload(Body):
    archive: str = Field(description="The revision archive (revision.tar.gz), base64")
    secrets: dict[str, str] = Field(
        default_factory=dict, description="Values of the variables the revision uses"
    )


def deployments_of(request: Request) -> Deployments[AccessPolicy]:
    """The server's deployments, for the operator only (404 first on a server that takes
    no deploys, which `/info` says to anyone)."""
    deployments = server_of(request).deployments
    if deployments is None:
        raise NotFound("this server takes no deploys (agentctl dev) — use agentctl serve")
    if not caller_of(request).operator:
        raise Forbidden("deploying needs the deployment key: send PLATFORM_API_KEY as x-api-key")
    return deployments


def revision_view(record: RevisionRecord, active: int | None) -> dict[str, Any]:
    manifest = record.manifest
    return {
        "number": record.number,
        "revision_id": record.revision_id,
        "agent": manifest["agent"]["name"],
        "model": manifest["agent"]["model"],
        "auth": (manifest.get("auth") or {}).get("provider"),
        "packages": manifest["packages"],
        "secrets": record.secret_names,  # names only: values never leave the server
        "created_at": record.created_at.isoformat(),
        "active": record.number == active,
    }


@router.post("/revisions", status_code=201, response_model=RevisionOut)
async def upload_revision(body: RevisionUpload, request: Request) -> Response:
    deployments = deployments_of(request)
    try:
        archive = base64.b64decode(body.archive, validate=True)
    except (binascii.Error, ValueError):
        raise Unprocessable(
            "archive: not base64 — send the bytes of revision.tar.gz, base64"
        ) from None
    record = await deployments.upload(archive, body.secrets)
    return json_response(revision_view(record, record.number), status=201)


@router.get("/revisions", response_model=list[RevisionOut])
async def list_revisions(
    request: Request,
    limit: Annotated[Limit, Query()] = 20,
    offset: Annotated[Offset, Query()] = 0,
) -> Response:
    deployments = deployments_of(request)
    records, total = await deployments.storage.revisions.list(limit=limit, offset=offset)
    active = await deployments.storage.revisions.active()
    return json_response(
        [revision_view(record, active) for record in records],
        headers=page_headers(offset, limit, len(records), total),
    )


@router.get("/revisions/{number}", response_model=RevisionOut)
async def get_revision(number: RevisionNumber, request: Request) -> Response:
    deployments = deployments_of(request)
    record = await deployments.storage.revisions.get(number)
    if record is None:
        raise NotFound(f"there is no revision {number} — list them with GET /platform/revisions")
    return json_response(revision_view(record, await deployments.storage.revisions.active()))


@router.post("/revisions/{number}/activate", response_model=RevisionOut)
async def activate_revision(number: RevisionNumber, request: Request) -> Response:
    deployments = deployments_of(request)
    if await deployments.storage.revisions.get(number) is None:
        raise NotFound(f"there is no revision {number} — list them with GET /platform/revisions")
    record = await deployments.activate(number)
    return json_response(revision_view(record, record.number))
