"""`threads/search` and `threads/count` with a `values` filter.

A thread's values live in its checkpoints, which the database cannot compare, so the threads
the other filters select (found by the database) are read one by one: of each, only the
channels the filter names, rebuilt by langgraph from the latest checkpoint. At most
`max_search_scan` threads are read, a broader filter is refused, and the loop is yielded to
between threads so that other requests keep being served meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from langgraph._internal._constants import NULL_TASK_ID
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.pregel._checkpoint import achannels_from_checkpoint

from agentctl import serde
from agentctl.errors import Unprocessable
from agentctl.server.context import Server
from agentctl.server.limits import beyond
from agentctl.server.state_view import thread_config, thread_values
from agentctl.storage.base import Page, Thread, ThreadFilter

BATCH = 200  # threads fetched from the database at a time
YIELD_AFTER = 0.005  # seconds of reading before other requests get the loop


async def search_by_values(
    server: Server,
    wanted: dict[str, Any],
    where: ThreadFilter,
    page: Page,
) -> tuple[list[Thread], int]:
    """The page of threads whose values hold `wanted` among those `where` selects, and how
    many match in all."""
    threads = server.storage.threads
    loop = asyncio.get_running_loop()
    offset, matched, shown, yielded = 0, 0, [], loop.time()
    while True:
        batch, total = await threads.search(
            where,
            Page(limit=BATCH, offset=offset, sort_by=page.sort_by, sort_order=page.sort_order),
        )
        limit = server.limits.max_search_scan
        if offset == 0 and total > limit:
            what = f"a values filter reads each thread the other filters select: {total} here"
            remedy = "narrow them with metadata, status or ids"
            raise Unprocessable(beyond(what, "max_search_scan", limit, remedy))
        for thread in batch:
            if _matches(await _values(server, thread.thread_id, wanted), wanted):
                if page.offset <= matched < page.offset + page.limit:
                    shown.append(thread)
                matched += 1
            if loop.time() - yielded > YIELD_AFTER:  # let other requests in
                await asyncio.sleep(0)
                yielded = loop.time()
        if len(batch) < BATCH:
            return shown, matched
        offset += BATCH


async def _values(server: Server, thread_id: str, keys: Iterable[str]) -> Any:
    """The thread's current values of `keys` (those it has), or None before its first
    checkpoint; all of its values where the cheap way could differ from `aget_state`."""
    graph = server.deployment.runtime.graph
    checkpointer = server.storage.checkpointer
    saved: CheckpointTuple | None = await checkpointer.aget_tuple(thread_config(thread_id))
    if saved is None:
        return None
    shown = graph.stream_channels_asis
    null_writes = any(w[0] == NULL_TASK_ID for w in saved.pending_writes or ())
    if isinstance(shown, str) or null_writes:  # a single-channel state; writes not yet applied
        return await thread_values(graph, thread_id)
    specs = {k: graph.channels[k] for k in keys if k in shown and k in graph.channels}
    channels, _ = await achannels_from_checkpoint(
        specs, saved.checkpoint, saver=checkpointer, config=saved.config
    )
    return {k: channel.get() for k, channel in channels.items() if channel.is_available()}


def _matches(values: Any, wanted: dict[str, Any]) -> bool:
    if not isinstance(values, dict):
        return False
    plain = serde.to_jsonable({k: values.get(k) for k in wanted})
    return all(plain.get(k) == v for k, v in wanted.items())
