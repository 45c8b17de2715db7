"""`GET /usage/me`: what the caller spent today and what is left of every budget that holds
them (docs/budgets.md). A signed-in user sees their own; the operator and anonymous callers
see the agent's, all users together."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from agentctl.metering.ledger import Tokens
from agentctl.server.access import caller_of
from agentctl.server.context import server_of
from agentctl.server.views import json_response
from agentctl.storage.base import UsageRow, now

router = APIRouter(tags=["usage"])


@router.get("/usage/me", response_model=dict[str, Any])
async def my_usage(request: Request) -> Response:
    """The caller's usage today (UTC) and each budget that applies, with what is used,
    what remains and when it resets."""
    server = server_of(request)
    user = caller_of(request).user
    today = now().date()
    rows = await server.storage.usage.summary(None, today, today, user_id=user)
    spent = (rows[0] if rows else UsageRow(None, Tokens(), None, 0)).as_json()
    del spent["key"]
    standing = await server.engine.budget_standing(user)
    return json_response(
        {
            "user_id": user,
            "day": today.isoformat(),
            "today": spent,
            "budgets": [s.as_json() for s in standing],
        }
    )
