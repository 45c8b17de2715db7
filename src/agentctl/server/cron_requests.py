"""What a client may ask of a cron: its schedule, and the runs it submits."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from agentctl.engine import crons as schedule
from agentctl.server.fields import Body, Config, Metadata, StreamModes

Interrupts = Literal["*"] | list[str]
# Request fields kept in the cron's payload and given to each run.
PAYLOAD_FIELDS = ("input", "metadata", "multitask_strategy", *schedule.RUN_FIELDS)


class CronFields(Body):
    input: Any = None
    metadata: Metadata | None = None
    config: Config | None = None
    context: dict[str, Any] | None = None
    interrupt_before: Interrupts | None = None
    interrupt_after: Interrupts | None = None
    webhook: str | None = None
    on_run_completed: Literal["delete", "keep"] | None = None
    end_time: datetime | None = None
    enabled: bool | None = None
    timezone: str | None = None
    stream_mode: StreamModes | None = None
    stream_subgraphs: bool | None = None
    stream_resumable: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None


class CronCreate(CronFields):
    schedule: str
    assistant_id: str
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] | None = None


class CronPatch(CronFields):
    schedule: str | None = None
