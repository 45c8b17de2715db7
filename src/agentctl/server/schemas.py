"""The shapes of the JSON the routes answer (as `views.py` and `state_view.py` build them),
for the OpenAPI document: routes name them as `response_model`, but return their JSON
already serialized, so these models never validate a response on the hot path."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, create_model

from agentctl.storage.base import RunStatus, ThreadStatus

Uuid = Annotated[str, Field(json_schema_extra={"format": "uuid"})]


class ErrorOut(BaseModel):
    """Every error: what went wrong and, for a bad field, which one."""

    detail: str


class AssistantOut(BaseModel):
    assistant_id: Uuid
    graph_id: str
    name: str
    description: str | None
    config: dict[str, Any]
    context: dict[str, Any]
    metadata: dict[str, Any]
    version: int
    created_at: datetime
    updated_at: datetime


class InterruptOut(BaseModel):
    value: Any
    id: str | None


class ThreadOut(BaseModel):
    thread_id: Uuid
    created_at: datetime
    updated_at: datetime
    state_updated_at: datetime
    metadata: dict[str, Any]
    status: ThreadStatus
    values: Any
    interrupts: dict[str, list[InterruptOut]]


class UsageCounts(BaseModel):
    """Tokens (cached ones are part of the input), model calls and their cost in US
    dollars: None when no price is known for any model counted (docs/usage.md)."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int
    total_tokens: int
    model_calls: int
    cost_usd: float | None


class RunUsageOut(UsageCounts):
    """What a run's model calls spent, in all and per model (`provider:model`)."""

    models: dict[str, UsageCounts]
    unpriced_models: list[str] | None = None  # present when some model has no known price


class UsageRowOut(UsageCounts):
    key: str | None  # the day (YYYY-MM-DD), user, model, thread or agent; None: no user
    runs: int
    unpriced_models: list[str] | None = None


class UsageTotalOut(UsageCounts):
    runs: int


class UsageOut(BaseModel):
    group_by: str | None
    since: str
    until: str
    user_id: str | None
    thread_id: str | None
    rows: list[UsageRowOut]
    total: UsageTotalOut
    unpriced_models: list[str]


class TraceStepOut(BaseModel):
    """A model call, tool call, subagent (`task`) or MCP call of a run, nested under the
    step it began in (`parent_id`). Times in milliseconds since the run's attempt began."""

    id: int
    parent_id: int | None
    kind: Literal["model", "tool", "subagent", "mcp"]
    name: str
    started_ms: float
    duration_ms: float | None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    total_tokens: int | None = None
    model_calls: int | None = None
    finish_reason: str | None = None
    error: str | None = None


class TraceOut(BaseModel):
    run_id: Uuid
    started_at: float  # epoch seconds
    duration_ms: float
    truncated: bool  # steps past the limit were not recorded
    steps: list[TraceStepOut]


class RunOut(BaseModel):
    run_id: Uuid
    thread_id: Uuid
    assistant_id: Uuid
    created_at: datetime
    updated_at: datetime
    status: RunStatus
    metadata: dict[str, Any]
    kwargs: dict[str, Any]
    multitask_strategy: str
    attempt: int
    cancel_reason: str | None = None
    usage: RunUsageOut | None = None


class CronOut(BaseModel):
    cron_id: Uuid
    assistant_id: Uuid
    thread_id: Uuid | None
    schedule: str
    timezone: str | None
    payload: dict[str, Any]
    next_run_date: datetime | None
    end_time: datetime | None
    on_run_completed: Literal["delete", "keep"] | None
    metadata: dict[str, Any]
    enabled: bool
    user_id: str | None
    created_at: datetime
    updated_at: datetime


class CheckpointOut(BaseModel):
    thread_id: Uuid | None
    checkpoint_ns: str
    checkpoint_id: str | None
    checkpoint_map: dict[str, Any] | None


class ThreadStateOut(BaseModel):
    values: Any
    next: list[str]
    tasks: list[dict[str, Any]]
    checkpoint: CheckpointOut | None
    metadata: dict[str, Any] | None
    created_at: str | None
    parent_checkpoint: CheckpointOut | None
    interrupts: list[InterruptOut]


class StateUpdateOut(BaseModel):
    checkpoint: CheckpointOut | None


class ItemOut(BaseModel):
    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    score: float | None = None


class ItemsOut(BaseModel):
    items: list[ItemOut]


class NamespacesOut(BaseModel):
    namespaces: list[list[str]]


class PrunedOut(BaseModel):
    pruned_count: int


class OkOut(BaseModel):
    ok: bool
    stopping: bool = False
    unavailable: list[str] | None = None  # the services that do not answer
    detail: str | None = None  # what is wrong with them ("the disk holding /x is full")


class NotServingOut(BaseModel):
    replica: str
    reason: str


class RolloutOut(BaseModel):
    serving: list[str]  # the live replicas serving the revision
    not_serving: list[NotServingOut]  # those that do not (yet), and why
    unknown: str | None = None  # why the replicas could not be read, if they could not


class RevisionOut(BaseModel):
    number: int
    revision_id: str
    agent: str
    model: str
    auth: str | None
    packages: list[str]
    secrets: list[str]
    created_at: datetime
    active: bool
    # A deploy's or rollback's answer on a platform: where the revision is served by then.
    replicas: RolloutOut | None = None


class SandboxSettingsOut(BaseModel):
    provider: str
    scope: str
    image: str
    template: str


class SandboxOut(BaseModel):
    name: str
    scope: str
    image: str
    template: str
    created_at: datetime
    last_used_at: datetime


class SandboxesOut(BaseModel):
    settings: SandboxSettingsOut | None
    sandboxes: list[SandboxOut]


def selected(model: type[BaseModel]) -> type[BaseModel]:
    """`model` as a search answers it: only the fields `select` names (all by default)."""
    fields: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        annotation: Any = field.annotation
        fields[name] = (annotation | None, None)
    if model is ThreadOut:
        fields["extracted"] = (dict[str, Any] | None, None)
    return create_model(f"Selected{model.__name__}", **fields)


# What the searches answer (types, as values for `response_model`).
ASSISTANT_LIST: Any = list[selected(AssistantOut)]  # type: ignore[misc]
THREAD_LIST: Any = list[selected(ThreadOut)]  # type: ignore[misc]
CRON_LIST: Any = list[selected(CronOut)]  # type: ignore[misc]
RUN_LIST: Any = list[selected(RunOut)]  # type: ignore[misc]


class SkillOut(BaseModel):
    name: str
    description: str
    content: str  # its SKILL.md


class SubagentOut(BaseModel):
    name: str
    description: str
    instructions: str
    skills: list[SkillOut]


class UserMemoryOut(BaseModel):
    path: str  # as the agent sees it: /memories/user/AGENTS.md
    template: str  # what a user's file starts as
    namespace: list[str] | None  # the caller's store namespace; None without a user
    key: str


class AgentOut(BaseModel):
    name: str
    revision: str
    instructions: str
    skills: list[SkillOut]
    subagents: list[SubagentOut]
    user_memory: UserMemoryOut | None  # None: the agent keeps no per-user memory
