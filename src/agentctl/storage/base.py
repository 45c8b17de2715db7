"""What the server keeps, and the protocols every storage backend implements.

Records are plain dataclasses; the server turns them into the LangGraph API's JSON. A backend
(the embedded SQLite one, or PostgreSQL + Redis) provides a `Storage`: the checkpointer
and the store the agent graph uses, plus the server's own tables (assistants, threads, runs,
crons) and the event log that makes streams resumable.
"""

from __future__ import annotations

import builtins
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Literal, Protocol

from agentctl.metering.ledger import Ledger, Tokens
from agentctl.storage.fence import Fence

RunStatus = Literal["pending", "running", "success", "error", "interrupted", "timeout"]
ThreadStatus = Literal["idle", "busy", "interrupted", "error"]
ACTIVE_RUN_STATUSES: tuple[RunStatus, ...] = ("pending", "running")
FINAL_RUN_STATUSES: tuple[RunStatus, ...] = ("success", "error", "interrupted", "timeout")
# The metadata key naming the user who created a thread or cron (set by the server only).
OWNER = "owner"
# The key of a run's kwargs (and a cron's payload) saying the operator started it (set by
# the server only; hidden from clients).
BY_OPERATOR = "by_operator"


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
    # What its model calls spent, priced (`metering.prices.priced_usage`); None when it
    # called none (or has not ended).
    usage: dict[str, Any] | None = None

    @property
    def owner(self) -> str:
        """Whom the run counts against when runs are admitted fairly (stored with it): its
        user (`user:<id>`), or for a run without one (no `[auth]`, the operator) its
        assistant (`assistant:<id>`)."""
        user = self.kwargs.get("user_id")
        return f"user:{user}" if user else f"assistant:{self.assistant_id}"


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


@dataclass
class A2ATask:
    """An A2A task as its clients see it: `task` is the protocol's JSON of it (status,
    artifacts, history). `owner`: the signed-in user whose task it is (None for the operator
    and anonymous callers); `position` orders a listing (its status's time in ns, -1 when it
    has none, newest first)."""

    task_id: str
    context_id: str
    owner: str | None
    state: str
    position: int
    task: dict[str, Any]
    updated_at: datetime = field(default_factory=now)


@dataclass(frozen=True)
class A2ATaskFilter:
    """Which tasks a listing shows: those of `owner` (None: everyone's), of a context, in a
    state, at or after `since` (a position), strictly after `after` (position, task id)."""

    owner: str | None = None
    context_id: str | None = None
    state: str | None = None
    since: int | None = None
    after: tuple[int, str] | None = None


@dataclass
class UserConnection:
    """A user's connection to a user-owned MCP server: the token set the provider issued
    (access and refresh tokens, type, issuer...), sealed, never stored in the clear.
    `expires_at`: when the access token expires (None: not said); `version` counts the
    replacements, for compare-and-swap (`ConnectionStore.put`)."""

    user_id: str
    server: str
    sealed: bytes
    scopes: tuple[str, ...]
    expires_at: datetime | None
    connected_at: datetime
    updated_at: datetime
    version: int = 1


@dataclass
class ConsentFlow:
    """A user connecting to a server, from the consent request to the provider's callback:
    `status` goes "pending" -> "redirected" -> "done" (or "failed"), each step once.
    `thread_id`/`assistant_id`: the run waiting for it (None: started from the connections
    view). Set when redirected: `state_hash` and `binding_hash` (sha256 hex of the OAuth
    `state` and of the browser-binding cookie), `sealed` (the PKCE verifier, redirect URI,
    endpoints and client, sealed)."""

    flow_id: str
    user_id: str
    server: str
    thread_id: str | None
    assistant_id: str | None
    status: str
    created_at: datetime
    expires_at: datetime
    state_hash: str | None = None
    binding_hash: str | None = None
    sealed: bytes | None = None


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


@dataclass(frozen=True)
class AssistantFilter:
    """Which assistants a search finds: those of `graph_id`, whose name contains `name`
    (case-insensitive), whose metadata holds every pair of `metadata`; None matches any."""

    graph_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ThreadFilter:
    """Which threads a search finds: metadata holding every pair of `metadata`, in `status`,
    among `ids`; None matches any."""

    metadata: dict[str, Any] = field(default_factory=dict)
    status: ThreadStatus | None = None
    ids: Sequence[str] | None = None


@dataclass(frozen=True)
class ThreadUpdate:
    """A change of a thread: merge `metadata` into the thread's, set the fields that are not
    None (and `updated_at`)."""

    metadata: dict[str, Any] = field(default_factory=dict)
    status: ThreadStatus | None = None
    interrupts: dict[str, list[dict[str, Any]]] | None = None


@dataclass(frozen=True)
class CronFilter:
    """Which crons a search finds: those of `assistant_id`, on `thread_id`, `enabled` or not,
    whose metadata holds every pair of `metadata`; None matches any."""

    assistant_id: str | None = None
    thread_id: str | None = None
    enabled: bool | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class AssistantStore(Protocol):
    async def put(self, assistant: Assistant) -> None:
        """Insert `assistant` as a new version and make that version the latest."""

    async def get(self, assistant_id: str) -> Assistant | None: ...

    async def search(self, where: AssistantFilter, page: Page) -> tuple[list[Assistant], int]:
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
        self, thread_id: str, change: ThreadUpdate, *, fence: Fence | None = None
    ) -> Thread | None:
        """Apply `change` at once, so that concurrent changes of different metadata keys all
        land; the thread after it (None when there is none). A run's attempt passes its
        `fence` (see `RunStore`)."""

    async def delete(self, thread_id: str) -> bool:
        """Delete the thread with its runs, events and checkpoints."""

    async def search(self, where: ThreadFilter, page: Page) -> tuple[list[Thread], int]: ...


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

    async def claim(self, at: datetime, *, worker: str, lease: float) -> Run | None:
        """Mark a runnable pending run `running` with `attempt` + 1, held by `worker` for
        `lease` seconds, and return it. Safe when many processes claim at once.

        Runnable: its `not_before` has passed, no other run of its thread is running and no
        older runnable one is pending. Fair: the oldest runnable run of the owner
        (`Run.owner`) with the fewest runs running anywhere, the oldest of those owners'
        first when several tie."""

    async def renew(self, worker: str, lease: float) -> dict[str, int]:
        """Extend by `lease` seconds (from the database's clock) the lease of every running
        run `worker` holds and return their ids with their attempts. A run the worker
        executes but that is missing here (or has another attempt) was taken from it (its
        lease expired and it was requeued): the worker must stop executing it."""

    async def extend(self, fence: Fence) -> bool:
        """Extend by `fence.lease` seconds the lease of the fence's attempt; False when that
        attempt no longer holds its run."""

    async def requeue_orphans(self, worker: str, at: datetime) -> builtins.list[Run]:
        """Running runs whose worker is gone become `pending` again (no worker, no lease);
        returns them. Gone: the lease expired before `at` — and, on a backend only one
        process uses (SQLite), any worker other than `worker`."""

    async def release(self, worker: str, *, run_id: str | None = None) -> builtins.list[Run]:
        """The running runs `worker` holds (only `run_id`, when given) become `pending`
        again, for any process to take at once (a graceful shutdown that could not finish
        them, or a run an outage stopped); returns them."""

    async def cancel_pending(self, run_id: str, *, delete: bool) -> bool:
        """If the run is still `pending`, delete it (`delete`) or mark it `interrupted`
        with cancel reason "cancelled"; False when it was not pending any more."""

    # The writes of a run's own attempt pass its `fence`: one that attempt no longer holds
    # is refused (`Fence.refused`: the attempt stops, `StaleAttempt` is raised).
    #
    # `usage`: the ledger of the attempt ending, stored in the same transaction as its end
    # (and refused with it): the run's `usage`, its usage rows per model (`UsageStore`,
    # kept when the run or its thread is deleted) and its trace (deleted with the run).

    async def finish(
        self,
        run_id: str,
        status: RunStatus,
        *,
        error: dict[str, Any] | None = None,
        fence: Fence | None = None,
        usage: Ledger | None = None,
    ) -> None: ...

    async def set_status(
        self,
        run_id: str,
        status: RunStatus,
        reason: str | None = None,
        *,
        fence: Fence | None = None,
        usage: Ledger | None = None,
    ) -> None:
        """Set a status without finishing (e.g. cancel a pending run)."""

    async def delete(self, run_id: str, *, fence: Fence | None = None) -> bool: ...

    async def next_wakeup(self) -> datetime | None:
        """When the earliest delayed pending run becomes runnable."""

    # Run starts, for the runs-per-minute budgets: kept apart from the runs (which a
    # stateless run deletes with its thread), for a few minutes.

    async def note_start(self, user_id: str | None, at: datetime) -> None:
        """A run of `user_id` (None: of no user) started at `at`."""

    async def starts(
        self, since: datetime, *, user_id: str | None = None, limit: int
    ) -> builtins.list[datetime]:
        """When runs started since `since` (only `user_id`'s, when given), newest first, at
        most `limit`."""

    async def forget_starts(self, before: datetime) -> int:
        """Forget the starts before `before`; how many."""


UsageGroup = Literal["day", "user", "model", "thread"]


@dataclass
class UsageRow:
    """What runs spent, summed over one key of a grouping (`UsageStore.summary`)."""

    key: str | None  # the day (YYYY-MM-DD), user, model or thread; None: all, or no user
    tokens: Tokens
    cost_usd: float | None  # of the priced models; None when none was priced
    runs: int
    unpriced_models: tuple[str, ...] = ()  # models counted with no known price

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            **self.tokens.as_json(),
            "cost_usd": self.cost_usd,
            "runs": self.runs,
            "unpriced_models": list(self.unpriced_models),
        }


class UsageStore(Protocol):
    """What runs spent, per run and model, stored when each ended (kept when the run or
    its thread is deleted), and the runs' traces."""

    async def summary(
        self,
        group_by: UsageGroup | None,
        since: date,
        until: date,
        *,
        user_id: str | None = None,
        thread_id: str | None = None,
    ) -> builtins.list[UsageRow]:
        """The usage of runs that ended from day `since` to day `until` (UTC, both
        included), of `user_id` and of `thread_id` when given, summed per key of
        `group_by` (in key order; one row, or none, when None)."""

    async def spent_on_budgets(self, user_id: str | None, since: datetime) -> tuple[int, float]:
        """What the runs of `user_id` (None: of every user) that ended since `since` spent,
        as budgets count it: input + output tokens, and dollars of the priced models; one
        sum of an index (every user's: the index alone)."""

    async def trace(self, run_id: str) -> dict[str, Any] | None:
        """The run's trace (`Ledger.trace_json()`), None when none was stored."""


class EventLog(Protocol):
    async def append(
        self, thread_id: str, run_id: str, event: str, data: bytes, *, fence: Fence | None = None
    ) -> Event:
        """Append an event of run `run_id`; with its attempt's `fence`, refused (see
        `RunStore`) once a later attempt of the run appended."""

    async def read(
        self, thread_id: str, *, after: str | None, run_id: str | None = None
    ) -> list[Event]:
        """Stored events of the thread (only `run_id`'s when given) after id `after`
        (from the beginning when None), all at once: for short logs (tests, tools). Streams
        read a page at a time (`page`, engine/streams.py)."""

    async def page(
        self, thread_id: str, *, after: str | None, limit: int, max_bytes: int
    ) -> list[Event]:
        """Stored events of the thread after id `after` (from the beginning when None), in
        order: at most `limit`, and none after the one whose data brings the page to
        `max_bytes`. A page short of both bounds is the end of the log."""

    async def last_id(self, thread_id: str) -> str | None:
        """The id of the thread's latest stored event (None when it has none)."""

    async def supersede(self, run_id: str, attempt: int) -> None:
        """Refuse from now on the fenced appends of run `run_id`'s attempts up to `attempt`
        (it was requeued: they no longer hold it). A backend whose fence reads the runs
        table itself needs nothing here."""

    def subscribe(self, thread_id: str) -> Subscription:
        """Live events appended to the thread, in every process, from this call on."""

    async def delete(self, thread_id: str) -> None:
        """Forget every event of the thread (it was deleted)."""


class Subscription(Protocol):
    async def next(self) -> Event | None:
        """The next live event, or None once `wake` was called."""
        ...

    def wake(self) -> None:
        """Make the pending (or the next) `next` return None."""
        ...

    def close(self) -> None: ...


class CronStore(Protocol):
    async def create(self, cron: Cron) -> None: ...

    async def get(self, cron_id: str) -> Cron | None: ...

    async def update(self, cron: Cron) -> None: ...

    async def delete(self, cron_id: str) -> bool: ...

    async def search(self, where: CronFilter, page: Page) -> tuple[list[Cron], int]: ...

    async def due(self, at: datetime) -> list[Cron]:
        """Enabled crons whose `next_run_date` has passed."""

    async def reschedule(self, cron: Cron, *, expected: datetime | None) -> bool:
        """Store `cron` only if its stored `next_run_date` is still `expected`; False when
        another process fired (rescheduled) it first, so each date fires once."""


class A2ATaskStore(Protocol):
    async def put(self, task: A2ATask) -> None:
        """Create or replace the task."""

    async def get(self, task_id: str) -> A2ATask | None: ...

    async def list(self, where: A2ATaskFilter, limit: int) -> tuple[builtins.list[A2ATask], int]:
        """At most `limit` matching tasks, newest first (position, then id, descending), and
        how many match, `where.after` aside."""

    async def delete(self, task_id: str) -> bool: ...


class ConnectionStore(Protocol):
    """Users' connections to user-owned MCP servers, the consent flows making them, the
    clients registered at each server's authorization server and the tools each server
    listed (its catalog). Sealed values are kept byte for byte, never opened here."""

    async def get(self, user_id: str, server: str) -> UserConnection | None: ...

    async def put(self, connection: UserConnection, *, expected_version: int | None) -> bool:
        """None: insert or replace whatever is there (version = old+1 or 1). Else replace only
        if the stored version is `expected_version` (compare-and-swap, version + 1); False
        when it is not (or absent). `connection.version` itself is not read."""

    async def delete(
        self, user_id: str, server: str | None = None, *, version: int | None = None
    ) -> int:
        """Delete the user's connection to `server` (None: all of the user's); how many.
        `version` (with `server`): only if the stored one is at that version (compare and
        delete: a connection written since it was read stays)."""

    async def list(self, user_id: str) -> builtins.list[UserConnection]:
        """The user's connections, by server."""

    async def counts(self) -> dict[str, int]:
        """How many users are connected to each server (servers with none left out)."""

    async def add_flow(self, flow: ConsentFlow) -> None: ...

    async def get_flow(self, flow_id: str) -> ConsentFlow | None: ...

    async def flow_by_state(self, state_hash: str) -> ConsentFlow | None:
        """The flow redirected with the OAuth `state` of this sha256 hex."""

    async def advance_flow(self, flow: ConsentFlow, *, from_status: str) -> bool:
        """Write `flow` only if the stored one's status is `from_status` (single use: of
        several processes advancing it at once, one does); False otherwise."""

    async def purge_flows(self, before: datetime) -> int:
        """Delete the flows that expired before `before`; how many."""

    async def delete_flows(self, user_id: str, server: str | None = None) -> int:
        """Delete the user's flows for `server` (None: for every server), whatever their
        status; how many."""

    async def get_client(self, server: str, issuer: str) -> bytes | None:
        """The sealed client registration at `server`'s authorization server `issuer`."""

    async def put_client(self, server: str, issuer: str, sealed: bytes) -> None: ...

    async def get_catalog(self, server: str) -> builtins.list[dict[str, Any]] | None:
        """The MCP tools (name, description, inputSchema...) as `server` listed them, in
        its order and with each object's keys in theirs; None before any listing."""

    async def put_catalog(self, server: str, tools: builtins.list[dict[str, Any]]) -> None: ...


@dataclass
class RevisionRecord:
    """A deployed revision: `number` counts deployments (1, 2, ...), `revision_id` is the
    content hash of its archive. Secret values are never part of a record, only names."""

    number: int
    revision_id: str
    manifest: dict[str, Any]
    secret_names: list[str] = field(default_factory=list)
    created_at: datetime = field(default_factory=now)


@dataclass(frozen=True)
class NewRevision:
    """A revision to store: its record's fields and its payload, the archive and the
    secrets (already encrypted)."""

    revision_id: str
    manifest: dict[str, Any]
    archive: bytes
    sealed_secrets: bytes
    secret_names: Sequence[str] = ()


class RevisionStore(Protocol):
    async def add(self, revision: NewRevision) -> RevisionRecord:
        """Store a new revision under the next number (never reused, even for the same
        content) and return its record."""

    async def get(self, number: int) -> RevisionRecord | None: ...

    async def list(self, *, limit: int, offset: int) -> tuple[builtins.list[RevisionRecord], int]:
        """Newest first, and the total count."""

    async def payload(self, number: int) -> tuple[bytes, bytes] | None:
        """The revision's archive and sealed secrets."""

    async def activate(self, number: int) -> None:
        """Make revision `number` the one every replica serves."""

    async def active(self) -> int | None:
        """The number of the revision to serve (None before the first deploy)."""


@dataclass(frozen=True)
class AgentRecord:
    """An agent of the platform: `namespace` is the storage namespace its data lives in
    (`storage/namespace.py`), None for the default storage (an agent deployed before the
    platform hosted several keeps its data there)."""

    name: str
    namespace: str | None
    created_at: datetime = field(default_factory=now)
    # Unique to this registration of the name (a random id), None for an agent registered
    # before agents had one: its sandboxes are named with it, so that an agent deleted and
    # created again under the same name never gets the sandboxes of the one before.
    incarnation: str | None = None


@dataclass(frozen=True)
class SandboxCleanup:
    """The sandboxes of a deleted agent, still to remove from the sandbox service: every
    sandbox whose name holds `owner` (`SandboxKey.owner`) — kept until they are gone."""

    owner: str
    agent: str
    requested_at: datetime = field(default_factory=now)
    attempts: int = 0
    last_error: str | None = None


class AgentRegistry(Protocol):
    """The agents of a platform, kept in its default storage (`platform_agents`), and the
    sandbox cleanups their deletions left to do (`platform_sandbox_cleanups`)."""

    async def add(self, agent: AgentRecord) -> bool:
        """Register `agent`; False (and nothing changed) when its name is taken."""

    async def get(self, name: str) -> AgentRecord | None: ...

    async def list(self) -> builtins.list[AgentRecord]:
        """Every agent, by name."""

    async def remove(self, name: str) -> bool:
        """Forget agent `name`; False when there was none."""

    async def request_cleanup(self, cleanup: SandboxCleanup) -> None:
        """Keep `cleanup` (committed when this returns) until `cleanup_done`; one already
        kept for its owner stays as it is."""

    async def cleanups(self) -> builtins.list[SandboxCleanup]:
        """Every cleanup still to do, oldest first."""

    async def cleanup_failed(self, owner: str, error: str) -> None:
        """One more attempt at the cleanup of `owner` failed, with `error`."""

    async def cleanup_done(self, owner: str) -> None:
        """The sandboxes of `owner` are gone: forget its cleanup."""


# A bus message: small JSON-able facts (ids, numbers), never secrets.
Message = dict[str, Any]
Handler = Callable[[Message], Awaitable[None]]


class Bus(Protocol):
    """Signals between the processes serving one deployment: in-process for SQLite, Redis
    pub/sub for PostgreSQL + Redis. Delivery is best effort — a message a process misses
    (it was restarting) must never lose data, only delay it (e.g. until a lease expires).

    Topics: `wake` (a run may be claimable), `cancel` (`{"run_id", "action"}`: whoever
    executes the run stops it), `deploy` (`{"number"}`: a new revision is active),
    `agents` (`{"name", "action"}`: an agent was created or deleted; default storage only),
    `replicas` (`{"replica"}`: a replica announced a change of what it serves).

    The bus also says which processes are there: each one `announce`s itself, with a small
    state, for a time it renews before it ends; one that stops renewing (it died, or is
    frozen) is gone from `members` once that time is up."""

    async def publish(self, topic: str, message: Message) -> None:
        """Deliver `message` to the handlers of `topic` in every process, this one included."""

    def subscribe(self, topic: str, handler: Handler) -> None:
        """Call `handler` with each message published on `topic` from now on (errors it
        raises are logged, not propagated)."""

    async def ready(self, topic: str) -> bool:
        """Wait (a few seconds at most) until messages on `topic` published from now on
        reach this process's handlers; False if that could not be confirmed."""

    async def announce(self, member: str, state: Message, ttl: float) -> None:
        """Say that process `member` is there, with `state`, for the next `ttl` seconds."""

    async def members(self) -> dict[str, Message]:
        """The state of each process announced and not expired, by member."""

    async def withdraw(self, member: str) -> None:
        """Process `member` is gone (it stopped)."""


class Storage(Protocol):
    """Everything one server process persists, and its line to the other processes."""

    # "sqlite" (one process) or "postgres" (PostgreSQL + Redis, any number of replicas).
    kind: str

    @property
    def checkpointer(self) -> Any:
        """A langgraph `BaseCheckpointSaver` that also has `acopy_thread(source, target)`,
        `aprune_to_latest(thread_id)` and `adelete_for_run(thread_id, run_id)`."""

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

    @property
    def revisions(self) -> RevisionStore: ...

    @property
    def a2a_tasks(self) -> A2ATaskStore:
        """The tasks of the A2A endpoint (deleted with their context's thread)."""

    @property
    def connections(self) -> ConnectionStore:
        """Users' connections to user-owned MCP servers (per agent, as all here)."""

    @property
    def usage(self) -> UsageStore:
        """What this agent's runs spent, and their traces."""

    @property
    def agents(self) -> AgentRegistry:
        """The platform's agents (used in the default storage only)."""

    @property
    def bus(self) -> Bus: ...

    async def unavailable(self) -> builtins.list[str]:
        """The services this storage is built on that do not answer right now (e.g.
        `["PostgreSQL"]`), each asked with a short timeout; empty when all answer."""

    async def sync(self) -> None:
        """Return once every write made so far is stored for good (committed), raising an
        outage's error (storage/outages.py) while it cannot be."""

    async def close(self) -> None: ...
