"""Records as the LangGraph API shows them, and JSON responses serialized once."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from agentctl import serde
from agentctl.engine.records import run_view as run_view
from agentctl.storage.base import BY_OPERATOR, Assistant, Cron, Thread


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        serde.dumps(data), status_code=status, media_type="application/json", headers=headers
    )


def page_headers(offset: int, limit: int, count: int, total: int) -> dict[str, str]:
    headers = {"X-Pagination-Total": str(total)}
    if offset + count < total:
        headers["X-Pagination-Next"] = str(offset + limit)
    return headers


# The fields of each record, in the order the API shows them.
ASSISTANT_FIELDS = (
    "assistant_id", "graph_id", "name", "description", "config", "context", "metadata",
    "version", "created_at", "updated_at",
)  # fmt: skip
CRON_FIELDS = (
    "cron_id", "assistant_id", "thread_id", "schedule", "timezone", "payload", "next_run_date",
    "end_time", "on_run_completed", "metadata", "enabled", "user_id", "created_at", "updated_at",
)  # fmt: skip


def _fields(record: object, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(record, name) for name in names}


def assistant_view(assistant: Assistant) -> dict[str, Any]:
    return _fields(assistant, ASSISTANT_FIELDS)


def thread_view(thread: Thread, values: Any = None) -> dict[str, Any]:
    return {
        "thread_id": thread.thread_id,
        "created_at": thread.created_at,
        "updated_at": thread.updated_at,
        "state_updated_at": thread.updated_at,
        "metadata": thread.metadata,
        "status": thread.status,
        "values": values,
        "interrupts": thread.interrupts,
    }


def cron_view(cron: Cron) -> dict[str, Any]:
    view = _fields(cron, CRON_FIELDS)
    view["payload"] = {k: v for k, v in cron.payload.items() if k != BY_OPERATOR}
    return view
