"""The threads table's statements, rows and search, for either database."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentctl.storage.base import EventLog, Page, Thread, ThreadFilter, ThreadUpdate, now
from agentctl.storage.fence import Fence
from agentctl.storage.sorts import THREAD_SORT, sort_field
from agentctl.storage.sql.dialect import Dialect, Query, page_queries
from agentctl.storage.sql.records import TableSql, columns, names
from agentctl.storage.sql.table import RecordTable

_COLUMNS = columns(
    "thread_id, metadata:json, status, created_at:time, updated_at:time, interrupts:json"
)
COLUMNS = names(_COLUMNS)
_TEXT = ("thread_id", "status")


class ThreadSql(TableSql[Thread]):
    def __init__(self, dialect: Dialect) -> None:
        super().__init__(d := dialect, Thread, _COLUMNS, "threads", "thread_id")
        self.values = self.rows.values
        self.insert += " ON CONFLICT (thread_id) DO NOTHING"
        self.delete_runs = f"DELETE FROM runs WHERE thread_id = {d.param}"
        self.delete_tasks = f"DELETE FROM a2a_tasks WHERE context_id = {d.param}"
        # Its runs' traces go with them (their usage rows stay: spend is spend).
        self.delete_traces = f"DELETE FROM run_traces WHERE thread_id = {d.param}"

    def search(self, where: ThreadFilter, page: Page) -> tuple[Query, Query]:
        """The page of matching threads, and their count."""
        d = self.dialect
        condition, params = d.matching("metadata", where.metadata, {"status": where.status})
        if where.ids is not None:
            among, values = d.one_of("thread_id", where.ids)
            condition += f" AND {among}"
            params.extend(values)
        sort = sort_field(page.sort_by, THREAD_SORT)
        sort = "updated_at" if sort == "state_updated_at" else sort
        order = f"{d.order(sort, page.sort_order, sort in _TEXT)}, {d.text('thread_id')}"
        return page_queries(
            d,
            f"SELECT {COLUMNS} FROM threads",
            (condition, params),
            order,
            page,
            "threads WHERE {where}",
        )


@dataclass(frozen=True)
class ThreadData:
    """What a thread owns outside its row, deleted with it: its event log and checkpoints."""

    events: EventLog
    checkpointer: Any  # the backend's langgraph checkpointer

    async def delete(self, thread_id: str) -> None:
        await self.events.delete(thread_id)
        await self.checkpointer.adelete_thread(thread_id)


class SqlThreadStore(RecordTable[Thread]):
    """The `ThreadStore` methods both SQL backends share; each adds how a change is applied
    and a thread's rows deleted."""

    sql: ThreadSql
    data: ThreadData

    async def delete(self, thread_id: str) -> bool:
        deleted = await self.delete_rows(thread_id)
        await self.data.delete(thread_id)
        return deleted

    async def update(
        self, thread_id: str, change: ThreadUpdate, *, fence: Fence | None = None
    ) -> Thread | None:
        return await self.apply(thread_id, change, now(), fence)

    @abstractmethod
    async def apply(
        self, thread_id: str, change: ThreadUpdate, at: datetime, fence: Fence | None
    ) -> Thread | None:
        """`update`, with `at` as the thread's `updated_at`; a fenced change that the fence's
        attempt may no longer make raises (`Fence.refused`)."""

    @abstractmethod
    async def delete_rows(self, thread_id: str) -> bool:
        """Delete the thread's row and its runs' at once; False when it had none."""

    async def create(self, thread: Thread) -> bool:
        return await self.write(self.sql.insert, self.sql.values(thread), durable=True) == 1

    async def get(self, thread_id: str) -> Thread | None:
        return await self.one(self.sql.get, (thread_id,))

    async def search(self, where: ThreadFilter, page: Page) -> tuple[list[Thread], int]:
        return await self.found(self.sql.search(where, page))
