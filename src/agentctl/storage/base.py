"""What the server keeps, and the protocols every storage backend implements.

Records are plain dataclasses; the server turns them into the LangGraph API's JSON. A backend
(the embedded SQLite one here; PostgreSQL + Redis later) provides a `Storage`: the checkpointer
and the store the agent graph uses, plus the server's own tables (assistants, threads, runs,
crons) and the event log that makes streams resumable.
"""

from __future__ import annotations

import builtins
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

RunStatus = Literal["pending", "running", "success", "error", "interrupted", "timeout"]
ThreadStatus = Literal["idle", "busy", "interrupted", "error"]
ACTIVE_RUN_STATUSES: tuple[RunStatus, ...] = ("pending", "running")
FINAL_RUN_STATUSES: tuple[RunStatus, ...] = ("success", "error", "interrupted", "timeout")
# The metadata key naming the user who created a thread or cron (set by the server only).
OWNER = "owner"


def now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    """A time-ordered UUID (v7 layout), so ids sort by creation like the reference's."""
    ms = time.time_ns() // 1_000_000
    rand = uuid.uuid4().int & ((1 << 74) - 1)
    value = (
        (ms << 80) | (0x7 << 76) | ((rand >> 62) << 64) | (0b10 << 62) | (rand & ((1 << 62) - 1))
    )
    return str(uuid.UUID(int=value))


@dataclass
class Assistant:
    assistant_id: str
    graph_id: str
    name: str
    description: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    version: int = 1
    created_at: datetime = field(default_factory=now)
    updated_at: datetime = field(default_factory=now)


@dataclass
class Thread:
    thread_id: str
    metadata: dict[str, Any] = field(default_factory=dict)
    status: ThreadStatus = "idle"
    created_at: datetime = field(default_factory=now)
    updated_at: datetime = field(default_factory=now)
    # Interrupts pending at the thread's latest checkpoint: {task id: [{"value", "id"}]}.
    interrupts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass
class Run:
    run_id: str
    thread_id: str
    assistant_id: str
    status: RunStatus = "pending"
    metadata: dict[str, Any] = field(default_factory=dict)
    multitask_strategy: str = "enqueue"
    # Everything the worker needs to execute the run: input, command, config, context,
    # stream_mode, stream_subgraphs, durability, checkpoint, interrupt_before/after, ...
    kwargs: dict[str, Any] = field(default_factory=dict)
    attempt: int = 0
    # Stateless runs (`thread_id: null`) run on a temporary thread that is deleted after.
    temporary: bool = False
    not_before: datetime | None = None
    created_at: datetime = field(default_factory=now)
    updated_at: datetime = field(default_factory=now)
    error: dict[str, Any] | None = None
    cancel_reason: str | None = None


@dataclass
class Cron:
    cron_id: str
    assistant_id: str
    thread_id: str | None
    schedule: str
    payload: dict[str, Any]
    next_run_date: datetime | None
    timezone: str | None = None
    end_time: datetime | None = None
    on_run_completed: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    enabled: bool = True
    user_id: str | None = None
    created_at: datetime = field(default_factory=now)
    updated_at: datetime = field(default_factory=now)


@dataclass(frozen=True)
class Event:
    """One streamed event: `id` orders events within a thread (`<ms>-<seq>`, as Redis
    stream ids), `data` is the JSON already serialized once for every subscriber."""

    id: str
    run_id: str
    event: str
    data: bytes


def event_position(event_id: str) -> tuple[int, int]:
    """The sort key of an event id; raises ValueError for a malformed one."""
    ms, _, seq = event_id.partition("-")
    return int(ms), int(seq or 0)


@dataclass(frozen=True)
class Page:
    """Search options shared by every list endpoint."""

    limit: int = 10
    offset: int = 0
    sort_by: str | None = None
    sort_order: Literal["asc", "desc"] = "desc"


class AssistantStore(Protocol):
    async def put(self, assistant: Assistant) -> None:
        """Insert `assistant` as a new version and make that version the latest."""

    async def get(self, assistant_id: str) -> Assistant | None: ...

    async def search(
        self, *, graph_id: str | None, name: str | None, metadata: dict[str, Any], page: Page
    ) -> tuple[list[Assistant], int]:
        """One page of matching assistants and the total count."""

    async def delete(self, assistant_id: str) -> bool: ...

    async def versions(
        self, assistant_id: str, *, metadata: dict[str, Any], limit: int, offset: int
    ) -> list[Assistant]: ...

    async def latest_version(self, assistant_id: str) -> int:
        """The highest version stored (0 when none)."""

    async def set_latest(self, assistant_id: str, version: int) -> Assistant | None: ...


class ThreadStore(Protocol):
    async def create(self, thread: Thread) -> bool:
        """Insert; False when the id exists (nothing is changed)."""

    async def get(self, thread_id: str) -> Thread | None: ...

    async def update(
        self,
        thread_id: str,
        *,
        metadata: dict[str, Any] | None = None,
        status: ThreadStatus | None = None,
        interrupts: dict[str, list[dict[str, Any]]] | None = None,
    ) -> Thread | None:
        """Merge `metadata` into the thread's and set the other fields given."""

    async def delete(self, thread_id: str) -> bool:
        """Delete the thread with its runs, events and checkpoints."""

    async def search(
        self,
        *,
        metadata: dict[str, Any],
        status: ThreadStatus | None,
        ids: Sequence[str] | None,
        page: Page,
    ) -> tuple[list[Thread], int]: ...


class RunStore(Protocol):
    async def create(self, run: Run) -> None: ...

    async def get(self, run_id: str) -> Run | None: ...

    async def list(
        self, thread_id: str, *, status: RunStatus | None, limit: int, offset: int
    ) -> builtins.list[Run]: ...

    async def active(self, thread_id: str) -> builtins.list[Run]:
        """The thread's pending and running runs, oldest first."""

    async def count_by_status(self) -> dict[str, int]:
        """How many runs are stored in each status."""

    async def all_active(self) -> builtins.list[Run]:
        """Every pending and running run, oldest first."""

    async def claim(self, at: datetime) -> Run | None:
        """Mark the oldest runnable pending run `running` with `attempt` + 1 and return it.

        Runnable: its `not_before` has passed and no other run of its thread is running."""

    async def finish(
        self,
        run_id: str,
        status: RunStatus,
        *,
        error: dict[str, Any] | None = None,
    ) -> None: ...

    async def set_status(self, run_id: str, status: RunStatus, reason: str | None = None) -> None:
        """Set a status without finishing (e.g. cancel a pending run)."""

    async def delete(self, run_id: str) -> bool: ...

    async def requeue_running(self) -> builtins.list[Run]:
        """After a restart: every `running` run becomes `pending` again; returns them."""

    async def next_wakeup(self) -> datetime | None:
        """When the earliest delayed pending run becomes runnable."""


class EventLog(Protocol):
    async def append(self, thread_id: str, run_id: str, event: str, data: bytes) -> Event: ...

    async def read(
        self, thread_id: str, *, after: str | None, run_id: str | None = None
    ) -> list[Event]:
        """Stored events of the thread (only `run_id`'s when given) after id `after`
        (from the beginning when None)."""

    def subscribe(self, thread_id: str) -> Subscription:
        """Live events appended to the thread from this call on."""


class Subscription(Protocol):
    async def next(self) -> Event: ...

    def close(self) -> None: ...


class CronStore(Protocol):
    async def create(self, cron: Cron) -> None: ...

    async def get(self, cron_id: str) -> Cron | None: ...

    async def update(self, cron: Cron) -> None: ...

    async def delete(self, cron_id: str) -> bool: ...

    async def search(
        self,
        *,
        assistant_id: str | None,
        thread_id: str | None,
        enabled: bool | None,
        metadata: dict[str, Any],
        page: Page,
    ) -> tuple[list[Cron], int]: ...

    async def due(self, at: datetime) -> list[Cron]:
        """Enabled crons whose `next_run_date` has passed."""


class Storage(Protocol):
    """Everything one server process persists."""

    @property
    def checkpointer(self) -> Any:  # langgraph BaseCheckpointSaver
        ...

    @property
    def store(self) -> Any:  # langgraph BaseStore
        ...

    @property
    def assistants(self) -> AssistantStore: ...

    @property
    def threads(self) -> ThreadStore: ...

    @property
    def runs(self) -> RunStore: ...

    @property
    def events(self) -> EventLog: ...

    @property
    def crons(self) -> CronStore: ...

    async def close(self) -> None: ...
