"""Crons: created and changed (checked, then scheduled), and deleted with what they belong
to — a thread, or an assistant."""

from __future__ import annotations

from agentctl.engine import crons as schedule
from agentctl.engine.wire import STREAM_MODES
from agentctl.errors import Unprocessable
from agentctl.server import lookup
from agentctl.server.access import Caller, without_owner
from agentctl.server.context import Server
from agentctl.server.cron_requests import PAYLOAD_FIELDS, CronCreate, CronFields, CronPatch
from agentctl.server.services.runs import check_webhook
from agentctl.storage.base import BY_OPERATOR, Cron, CronFilter, Page, new_id, now


async def _check(server: Server, body: CronFields, schedule_text: str | None) -> None:
    """422 for a schedule, time zone, stream mode or webhook no run could be submitted
    with."""
    try:
        if schedule_text is not None:
            schedule.check_schedule(schedule_text)
        await schedule.load_timezone(body.timezone)
    except ValueError as exc:
        raise Unprocessable(str(exc)) from None
    modes = [body.stream_mode] if isinstance(body.stream_mode, str) else body.stream_mode or []
    for mode in modes:
        if mode not in STREAM_MODES:
            raise Unprocessable(
                f"stream_mode {mode!r} is not supported — use one of {', '.join(STREAM_MODES)}"
            )
    await check_webhook(server, body.webhook)


def _check_on_run_completed(body: CronFields, thread_id: str | None) -> None:
    """422 for `on_run_completed: "delete"` on a thread's cron: its runs use that thread."""
    if thread_id is not None and body.on_run_completed == "delete":
        raise Unprocessable(
            "on_run_completed: 'delete' applies to crons without a thread (POST /runs/crons), "
            "whose runs each get a new thread; a thread's cron keeps its thread — leave "
            "on_run_completed out"
        )


async def create_cron(
    server: Server, caller: Caller, body: CronCreate, thread_id: str | None
) -> Cron:
    """A new cron of `caller`'s, on `thread_id` or each run on a new thread, scheduled."""
    await _check(server, body, body.schedule)
    _check_on_run_completed(body, thread_id)
    assistant = await lookup.get_assistant(server, body.assistant_id)
    if thread_id is not None:
        await lookup.get_thread(server, thread_id, caller)
    metadata = caller.stamp(body.metadata)
    payload = {k: v for k in PAYLOAD_FIELDS if (v := getattr(body, k, None)) is not None}
    if "metadata" in payload:  # the runs it fires carry the cron's metadata, owner included
        payload["metadata"] = metadata
    if caller.operator:  # so are the runs it fires
        payload[BY_OPERATOR] = True
    cron = Cron(
        cron_id=new_id(),
        assistant_id=assistant.assistant_id,
        thread_id=thread_id,
        schedule=body.schedule,
        payload=payload,
        next_run_date=None,
        timezone=body.timezone,
        end_time=schedule.as_utc(body.end_time, body.timezone),
        on_run_completed=None if thread_id else body.on_run_completed or "delete",
        metadata=metadata,
        enabled=body.enabled is not False,
        user_id=caller.user,
    )
    if cron.enabled:
        schedule.schedule_next(cron, now())
    await server.storage.crons.create(cron)
    server.scheduler.wake()
    return cron


async def update_cron(server: Server, cron: Cron, body: CronPatch) -> None:
    """Change `cron` as `body` says (the fields it sets), and schedule it again."""
    given = body.model_fields_set
    await _check(server, body, body.schedule)
    _check_on_run_completed(body, cron.thread_id)
    if body.schedule is not None:
        cron.schedule = body.schedule
    if "timezone" in given:
        cron.timezone = body.timezone
    if "end_time" in given:
        cron.end_time = schedule.as_utc(body.end_time, cron.timezone)
    if body.enabled is not None:
        cron.enabled = body.enabled
    if body.on_run_completed is not None and cron.thread_id is None:
        cron.on_run_completed = body.on_run_completed
    if body.metadata is not None:
        cron.metadata = {**cron.metadata, **without_owner(body.metadata)}
    payload = dict(cron.payload)
    for name in PAYLOAD_FIELDS:
        if name in given:
            payload.pop(name, None)
            value = cron.metadata if name == "metadata" else getattr(body, name)
            if value is not None:
                payload[name] = value
    cron.payload = payload
    if cron.enabled and given & {"schedule", "timezone", "end_time", "enabled"}:
        schedule.schedule_next(cron, now())
    cron.updated_at = now()
    await server.storage.crons.update(cron)
    server.scheduler.wake()


async def delete_crons_where(
    server: Server, *, thread_id: str | None = None, assistant_id: str | None = None
) -> int:
    """Delete every cron of a thread or of an assistant (both deleted with them)."""
    if thread_id is None and assistant_id is None:
        raise ValueError("delete_crons_where needs a thread or an assistant")
    where = CronFilter(assistant_id=assistant_id, thread_id=thread_id)
    deleted = 0
    while True:
        found, _ = await server.storage.crons.search(where, Page(limit=100))
        if not found:
            return deleted
        for cron in found:
            deleted += await server.storage.crons.delete(cron.cron_id)
