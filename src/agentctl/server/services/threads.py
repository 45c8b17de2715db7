"""Threads: created (their state built by supersteps), copied, deleted (with everything that hangs
on them) and their checkpoints pruned."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.types import StateUpdate

from agentctl.errors import Conflict, Unprocessable
from agentctl.server.access import Caller
from agentctl.server.context import Server
from agentctl.server.errors import not_found
from agentctl.server.fields import OnConflict
from agentctl.server.services.crons import delete_crons_where
from agentctl.server.state_view import thread_config
from agentctl.storage.base import Page, Thread, ThreadFilter, now


async def create_thread(
    server: Server,
    caller: Caller,
    thread_id: str,
    metadata: dict[str, Any] | None,
    *,
    if_exists: OnConflict = "raise",
    supersteps: Sequence[Sequence[StateUpdate]] = (),
) -> tuple[Thread, bool]:
    """A new thread of `caller`'s, its state built by `supersteps`: (it, True). With
    `if_exists="do_nothing"`, the caller's thread already of that id: (it, False)."""
    thread = Thread(thread_id=thread_id, metadata=caller.stamp(metadata))
    if not await server.storage.threads.create(thread):
        existing = await server.storage.threads.get(thread_id)
        if existing is not None and not caller.owns(existing.metadata):
            # Another user's id: the 404 of GET, not "exists", so nothing confirms it.
            raise not_found("thread", thread_id)
        if if_exists == "do_nothing" and existing is not None:
            return existing, False
        raise Conflict(
            f'thread {thread_id} already exists — use another id or pass if_exists="do_nothing"'
        )
    if supersteps:
        await apply_supersteps(server, thread_id, supersteps)
    return thread, True


async def apply_supersteps(
    server: Server, thread_id: str, steps: Sequence[Sequence[StateUpdate]]
) -> None:
    """Build a new thread's state, step by step; a thread whose steps fail is deleted."""
    graph = server.deployment.runtime.graph
    try:
        await graph.abulk_update_state(thread_config(thread_id), steps)
    except Exception as exc:
        await server.storage.threads.delete(thread_id)
        raise Unprocessable(f"supersteps could not be applied: {exc}") from None


async def copy_thread(server: Server, source: Thread, caller: Caller) -> Thread:
    """A new thread of `caller`'s with `source`'s metadata and checkpoints (not its runs)."""
    copy = Thread(
        thread_id=str(uuid.uuid4()),
        metadata={**source.metadata, **caller.stamp({})},
        status="idle" if source.status == "busy" else source.status,
        interrupts=source.interrupts,
        created_at=now(),
    )
    await server.storage.threads.create(copy)
    await server.storage.checkpointer.acopy_thread(source.thread_id, copy.thread_id)
    return copy


async def delete_thread(server: Server, thread_id: str) -> bool:
    """Delete a thread with its runs (cancelled first), events, checkpoints and crons."""
    await server.engine.cancel_and_wait(await server.storage.runs.active(thread_id))
    await delete_crons_where(server, thread_id=thread_id)
    return await server.storage.threads.delete(thread_id)


async def delete_threads_where(server: Server, metadata: dict[str, Any]) -> int:
    """Delete every thread whose metadata has `metadata`; how many were deleted."""
    deleted = 0
    while True:
        found, _ = await server.storage.threads.search(ThreadFilter(metadata), Page(limit=100))
        if not found:
            return deleted
        for thread in found:
            deleted += await delete_thread(server, thread.thread_id)


async def keep_latest(server: Server, thread_id: str) -> bool:
    """Drop every checkpoint of the thread but the latest, keeping its state.

    A `DeltaChannel` (the agent's messages and files) stores only writes, and its value is
    rebuilt from the checkpoints before; so the latest checkpoint first gets a full snapshot
    of each such channel. A thread whose delta channel cannot be read back is left alone."""
    graph = server.deployment.runtime.graph
    checkpointer = server.storage.checkpointer
    latest = await checkpointer.aget_tuple(thread_config(thread_id))
    if latest is None:
        return True
    delta = [k for k, ch in graph.channels.items() if isinstance(ch, DeltaChannel)]
    if any(k not in graph.stream_channels_list for k in delta):
        return False
    if delta:
        values = (await graph.aget_state(latest.config)).values
        checkpoint = dict(latest.checkpoint)
        checkpoint["channel_values"] = {
            **checkpoint["channel_values"],
            **{k: _DeltaSnapshot(values[k]) for k in delta if k in values},
        }
        metadata = dict(latest.metadata)
        counters = dict(metadata.get("counters_since_delta_snapshot") or {})
        metadata["counters_since_delta_snapshot"] = {
            k: v for k, v in counters.items() if k not in delta
        }
        root = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        await checkpointer.aput(root, checkpoint, metadata, {})
    await checkpointer.aprune_to_latest(thread_id)
    return True
