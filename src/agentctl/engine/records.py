"""A run as the LangGraph API shows it: in responses, and in the webhook of its end."""

from __future__ import annotations

from typing import Any

from agentctl.engine.streams import LOG_START
from agentctl.engine.wire import ANSWERS_INTERRUPT
from agentctl.observability.tracing import TRACE_CONTEXT
from agentctl.storage.base import BY_OPERATOR, Run

# What the server keeps in a run's kwargs for itself.
PRIVATE_KWARGS = frozenset({"user_id", BY_OPERATOR, LOG_START, ANSWERS_INTERRUPT, TRACE_CONTEXT})


def run_view(run: Run) -> dict[str, Any]:
    kwargs = {k: v for k, v in run.kwargs.items() if k not in PRIVATE_KWARGS}
    return {
        "run_id": run.run_id,
        "thread_id": run.thread_id,
        "assistant_id": run.assistant_id,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "status": run.status,
        "metadata": run.metadata,
        "kwargs": kwargs,
        "multitask_strategy": run.multitask_strategy,
        "attempt": run.attempt,
        "cancel_reason": run.cancel_reason,
        "usage": run.usage,
    }
