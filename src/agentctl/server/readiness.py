"""Readiness, as `/ok` answers it for an agent's server and for the platform's root."""

from __future__ import annotations

from starlette.responses import Response

from agentctl.server import views
from agentctl.storage.base import Storage
from agentctl.storage.outages import RETRY_AFTER_SECONDS, describe, outages


async def readiness(storage: Storage, stopping: bool, live: bool) -> Response:
    """503 once stopping (draining runs) or while a service of `storage` does not answer
    (or the embedded database's disk takes no writes), with what is wrong in `detail`, so a
    load balancer sends new requests elsewhere meanwhile; `live`: 200 for as long as the
    process answers at all, so an outage of a service does not get replicas restarted."""
    if live:
        return views.json_response({"ok": True})
    if stopping:
        return views.json_response({"ok": False, "stopping": True}, status=503)
    unavailable = await storage.unavailable()
    outages.settle(unavailable)
    if unavailable:
        detail = "; ".join(describe(service) for service in unavailable)
        body = {"ok": False, "unavailable": unavailable, "detail": detail}
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        return views.json_response(body, status=503, headers=headers)
    return views.json_response({"ok": True})
