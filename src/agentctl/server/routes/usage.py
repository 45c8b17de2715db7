"""What runs spent: `GET /usage`, summed per day, user, model or thread over a span of days.
A signed-in user sees their own usage only; the deployment key (or `agentctl dev` without
`[auth]`) sees everyone's."""

from __future__ import annotations

from datetime import date

from fastapi import APIRouter, Request
from starlette.responses import Response

from agentctl.server.access import caller_of
from agentctl.server.context import server_of
from agentctl.server.schemas import UsageOut
from agentctl.server.services.usage import summary, usage_answer, usage_query
from agentctl.server.views import json_response
from agentctl.storage.base import UsageGroup

router = APIRouter(tags=["usage"])


@router.get("/usage", response_model=UsageOut)
async def get_usage(
    request: Request,
    group_by: UsageGroup | None = None,
    since: date | None = None,
    until: date | None = None,
    user_id: str | None = None,
    thread_id: str | None = None,
) -> Response:
    """Tokens, model calls, cost and runs of the runs that ended from `since` to `until`
    (UTC days, both included; default the last 30 days), per `group_by` key."""
    query = usage_query(caller_of(request), since, until, user_id, thread_id)
    rows, total = await summary(server_of(request).storage, group_by, query)
    return json_response(usage_answer(group_by, query, rows, total))
