"""The fields each list endpoint sorts by: the request models' `sort_by` types and the
whitelists every backend checks a sort against, written once."""

from __future__ import annotations

from typing import Literal, get_args

AssistantSort = Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"]
ThreadSort = Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"]
CronSort = Literal[
    "cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date", "end_time"
]

ASSISTANT_SORT: frozenset[str] = frozenset(get_args(AssistantSort))
THREAD_SORT: frozenset[str] = frozenset(get_args(ThreadSort))
CRON_SORT: frozenset[str] = frozenset(get_args(CronSort))
# What a list is sorted by when the request names no field (or one not in its whitelist).
DEFAULT_SORT = "created_at"


def sort_field(requested: str | None, allowed: frozenset[str]) -> str:
    """`requested` when it is one of `allowed`, else the default field."""
    return requested if requested is not None and requested in allowed else DEFAULT_SORT
