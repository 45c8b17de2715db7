"""The PostgreSQL checkpointer saves in one statement the rows the library's saver writes."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import ERROR, INTERRUPT, empty_checkpoint
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.types import Interrupt

from agentctl.storage.base import new_id
from agentctl.storage.postgres import PostgresStorage

from .conftest import OpenPostgres

pytestmark = pytest.mark.postgres

COLUMNS = {
    "checkpoints": "checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata",
    "checkpoint_blobs": "checkpoint_ns, channel, version, type, blob",
    "checkpoint_writes": "checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type,"
    " blob",
}


def checkpoint(number: int, values: dict[str, Any], versions: dict[str, str]) -> Any:
    return {
        **empty_checkpoint(),
        "id": f"1ef00000-0000-6000-8000-00000000000{number}",
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": versions,
    }


async def save_a_thread(saver: Any, thread_id: str) -> None:
    """Checkpoints with inline and blob values (new, and not), and pending writes (special
    ones, one twice, and regular ones). (A delta snapshot at a version that is not new is
    where the two differ on purpose: test_conformance.py's
    test_delta_snapshot_then_prune_keeps_the_state.)"""
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    messages = [HumanMessage("hi", id="m1"), AIMessage("hello", id="m2")]
    first = checkpoint(1, {"messages": messages, "n": 1, "done": None}, {"messages": "1"})
    first["channel_versions"] |= {"n": "1", "done": "1"}
    config = await saver.aput(config, first, {"step": 0, "run_id": "r"}, {"messages": "1"})
    writes = [("messages", [AIMessage("more", id="m3")]), ("n", 2), (INTERRUPT, "ask")]
    await saver.aput_writes(config, writes, "task-1", "path")
    await saver.aput_writes(config, [(ERROR, "first"), (ERROR, "second")], "task-2")
    await saver.aput_writes(config, [(INTERRUPT, Interrupt("x", id="i"))], "task-1", "path")
    await saver.aput_writes(config, [], "task-3")
    second = checkpoint(2, {"messages": messages, "n": 2}, {"messages": "1"})
    second["channel_versions"] |= {"n": "2"}
    await saver.aput(config, second, {"step": 1, "extra": {"k": [1, 2.5]}}, {"n": "2"})


async def rows(storage: PostgresStorage, thread_id: str) -> dict[str, list[Any]]:
    found = {}
    async with storage.pool.connection() as conn:
        for table, columns in COLUMNS.items():
            cursor = await conn.execute(
                f"SELECT {columns} FROM {table} WHERE thread_id = %s ORDER BY {columns}",
                (thread_id,),
                binary=True,
            )
            found[table] = await cursor.fetchall()
    return found


async def test_a_save_writes_the_rows_of_the_library(
    database_url: str, open_postgres: OpenPostgres
) -> None:
    storage = await open_postgres(database_url)
    library = AsyncPostgresSaver(storage.pool)
    ours, theirs = new_id(), new_id()
    await save_a_thread(storage.checkpointer, ours)
    await save_a_thread(library, theirs)
    assert await rows(storage, ours) == await rows(storage, theirs)
    assert len((await rows(storage, ours))["checkpoint_writes"]) == 4
    read = await storage.checkpointer.aget_tuple({"configurable": {"thread_id": ours}})
    assert read.checkpoint["channel_values"]["messages"] == [
        HumanMessage("hi", id="m1"),
        AIMessage("hello", id="m2"),
    ]
