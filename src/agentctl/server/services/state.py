"""Updating a thread's state outside a run: the update applied through the graph, the
thread's status and interrupts settled again, and the change told to the thread's stream."""

from __future__ import annotations

from typing import Any

from langgraph.errors import InvalidUpdateError

from agentctl import serde
from agentctl.errors import Conflict, NotFound, Unprocessable
from agentctl.server.context import Server
from agentctl.server.state_view import checkpoint_view, thread_config
from agentctl.storage.base import ThreadStatus, ThreadUpdate

# The event a state update leaves in the thread's log (the thread stream's `state_update`).
STATE_UPDATE_EVENT = "state_update"

Values = dict[str, Any] | list[dict[str, Any]] | None


async def check_checkpoint(server: Server, thread_id: str, config: dict[str, Any]) -> None:
    """404 when `config` names a checkpoint the thread does not have: langgraph would start
    from an empty state instead, leaving a checkpoint whose parent is nowhere."""
    checkpoint_id = config["configurable"].get("checkpoint_id")
    if checkpoint_id and await server.storage.checkpointer.aget_tuple(config) is None:
        raise NotFound(
            f"checkpoint_id: checkpoint {checkpoint_id!r} not found on thread {thread_id}"
        )


async def update_thread_state(
    server: Server, thread_id: str, config: dict[str, Any], values: Values, as_node: str | None
) -> dict[str, Any] | None:
    """Apply `values` (as written by `as_node`) at the checkpoint `config` names: the new
    checkpoint. Refused while a run is running on the thread."""
    active = await server.storage.runs.active(thread_id)
    if any(run.status == "running" for run in active):
        raise Conflict(
            f"thread {thread_id} is running a task — wait for it or cancel it before "
            "updating its state"
        )
    await check_checkpoint(server, thread_id, config)
    graph = server.deployment.runtime.graph
    try:
        new_config = await graph.aupdate_state(config, values, as_node=as_node)
    except (InvalidUpdateError, ValueError, TypeError, KeyError, NotImplementedError) as exc:
        # e.g. a message that is not a message (langchain raises NotImplementedError)
        keys = ", ".join(values) if isinstance(values, dict) else ""
        raise Unprocessable(
            f"body values{f' ({keys})' if keys else ''}: the state update could not be "
            f"applied: {exc}",
        ) from None
    checkpoint = checkpoint_view(new_config)
    await settle_thread(server, thread_id, busy=bool(active))
    await server.storage.events.append(
        thread_id,
        "",
        STATE_UPDATE_EVENT,
        serde.dumps({"checkpoint": checkpoint, "values": values, "as_node": as_node}),
    )
    return checkpoint


async def settle_thread(server: Server, thread_id: str, *, busy: bool) -> None:
    """The thread's status and pending interrupts after its state changed outside a run."""
    snapshot = await server.deployment.runtime.graph.aget_state(thread_config(thread_id))
    interrupts = {
        task.id: serde.to_jsonable([{"value": i.value, "id": i.id} for i in task.interrupts])
        for task in snapshot.tasks
        if task.interrupts
    }
    status: ThreadStatus = "busy" if busy else ("interrupted" if interrupts else "idle")
    change = ThreadUpdate(status=status, interrupts=interrupts)
    await server.storage.threads.update(thread_id, change)
