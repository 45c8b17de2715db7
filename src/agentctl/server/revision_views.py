"""What the platform routes share about revisions: the upload's body and a revision's view."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from pydantic import Field
from starlette.responses import Response

from agentctl.errors import NotFound, Unprocessable
from agentctl.platform.deployments import Deployments
from agentctl.server.access import AccessPolicy
from agentctl.server.fields import Body
from agentctl.server.views import json_response, page_headers
from agentctl.storage.base import RevisionRecord


class RevisionUpload(Body):
    archive: str = Field(description="The revision archive (revision.tar.gz), base64")
    secrets: dict[str, str] = Field(
        default_factory=dict, description="Values of the variables the revision uses"
    )

    def archive_bytes(self) -> bytes:
        try:
            return base64.b64decode(self.archive, validate=True)
        except (binascii.Error, ValueError):
            raise Unprocessable(
                "archive: not base64 — send the bytes of revision.tar.gz, base64"
            ) from None


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


async def revisions_page(
    deployments: Deployments[AccessPolicy], limit: int, offset: int
) -> Response:
    """One page of the revisions, newest first."""
    records, total = await deployments.storage.revisions.list(limit=limit, offset=offset)
    active = await deployments.storage.revisions.active()
    return json_response(
        [revision_view(record, active) for record in records],
        headers=page_headers(offset, limit, len(records), total),
    )


async def activate(deployments: Deployments[AccessPolicy], number: int) -> RevisionRecord:
    """Make revision `number` active again (a rollback, or forward)."""
    if await deployments.storage.revisions.get(number) is None:
        raise NotFound(f"there is no revision {number} — list the revisions first")
    return await deployments.activate(number)
