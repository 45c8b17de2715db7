"""A thread's state as the LangGraph API shows it: a langgraph `StateSnapshot` becomes the
SDK's `ThreadState` JSON (values, next, checkpoint, metadata, created_at, parent_checkpoint,
tasks, interrupts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.types import StateSnapshot

STATE_FIELDS = frozenset(
    {"values", "next", "tasks", "checkpoint", "metadata", "created_at", "parent_checkpoint",
     "interrupts"}
)  # fmt: skip


def thread_config(thread_id: str, **configurable: Any) -> dict[str, Any]:
    """The langgraph config that addresses a thread (and optionally one checkpoint)."""
    extra = {k: v for k, v in configurable.items() if v is not None}
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", **extra}}


def checkpoint_view(config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """`{thread_id, checkpoint_ns, checkpoint_id, checkpoint_map}` of a checkpoint's config,
    or None when the config names no checkpoint."""
    if not config:
        return None
    configurable = config.get("configurable") or {}
    if not configurable.get("thread_id") or not configurable.get("checkpoint_id"):
        return None
    return {
        "thread_id": str(configurable["thread_id"]),
        "checkpoint_ns": configurable.get("checkpoint_ns") or "",
        "checkpoint_id": configurable["checkpoint_id"],
        "checkpoint_map": configurable.get("checkpoint_map"),
    }


def interrupt_view(interrupt: Any) -> dict[str, Any]:
    if isinstance(interrupt, Mapping):
        return {"value": interrupt.get("value"), "id": interrupt.get("id")}
    return {"value": getattr(interrupt, "value", None), "id": getattr(interrupt, "id", None)}


def _error_text(error: Any) -> str | None:
    if error is None:
        return None
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}"
    return str(error)


def task_view(task: Any) -> dict[str, Any]:
    state = task.state
    return {
        "id": task.id,
        "name": task.name,
        # Where the task sits in the graph (`["__pregel_push", i, …]` for the i-th tool call
        # a step sent): the JS SDK's `useStream` maps a subagent's tool call to its namespace.
        "path": list(task.path),
        "error": _error_text(task.error),
        "interrupts": [interrupt_view(i) for i in task.interrupts],
        "checkpoint": checkpoint_view(state) if isinstance(state, Mapping) else None,
        "state": state_view(state) if isinstance(state, StateSnapshot) else None,
        "result": getattr(task, "result", None),
    }


def state_view(snapshot: StateSnapshot) -> dict[str, Any]:
    """The `ThreadState` JSON of `snapshot` (values are serialized later, with serde)."""
    configurable = (snapshot.config or {}).get("configurable") or {}
    checkpoint = checkpoint_view(snapshot.config) or {
        "thread_id": configurable.get("thread_id"),
        "checkpoint_ns": configurable.get("checkpoint_ns") or "",
        "checkpoint_id": None,
        "checkpoint_map": None,
    }
    return {
        "values": snapshot.values,
        "next": list(snapshot.next),
        "tasks": [task_view(task) for task in snapshot.tasks],
        "checkpoint": checkpoint,
        "metadata": dict(snapshot.metadata) if snapshot.metadata is not None else {},
        "created_at": snapshot.created_at,
        "parent_checkpoint": checkpoint_view(snapshot.parent_config),
        "interrupts": [interrupt_view(i) for i in snapshot.interrupts],
    }


def select_state(view: dict[str, Any], select: Sequence[str] | None) -> dict[str, Any]:
    """Only the fields in `select`; `values.<key>` keeps one key of the values."""
    if not select:
        return view
    fields = {name for name in select if name in STATE_FIELDS}
    keys = [name.split(".", 1)[1] for name in select if name.startswith("values.")]
    out = {name: view[name] for name in view if name in fields}
    if keys and "values" not in fields and isinstance(view.get("values"), Mapping):
        out["values"] = {k: view["values"][k] for k in keys if k in view["values"]}
    return out


async def thread_values(graph: Any, thread_id: str) -> Any:
    """The values at the thread's latest checkpoint, or None before its first one."""
    snapshot = await graph.aget_state(thread_config(thread_id))
    return None if snapshot.created_at is None else snapshot.values
