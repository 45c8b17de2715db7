"""Starting a run: the request checked against its assistant and thread (created when the
run asks for it), then handed to the engine."""

from __future__ import annotations

from agentctl.engine.egress import Refused
from agentctl.engine.engine import thread_labels
from agentctl.engine.wire import ANSWERS_INTERRUPT, normalize_modes
from agentctl.errors import BadRequest, Conflict, NotFound, Unprocessable
from agentctl.observability.tracing import TRACE_CONTEXT, trace_context
from agentctl.server import lookup
from agentctl.server.access import Caller
from agentctl.server.context import Server
from agentctl.server.errors import not_found
from agentctl.server.limits import check_event_size, check_messages
from agentctl.server.run_requests import RunCreate
from agentctl.server.services.state import check_checkpoint
from agentctl.server.state_view import thread_config
from agentctl.storage.base import Run, Thread, new_id


async def start_run(
    server: Server,
    caller: Caller,
    body: RunCreate,
    thread_id: str | None,
    *,
    wait: bool = False,
    run_id: str | None = None,
    answers_interrupt: bool = False,
) -> Run:
    """Check the request against the thread, then hand the run to the engine. The run
    executes as `caller`'s user (their memory), whatever the request's config says.
    `run_id`: the new run's id, when the caller chose it (A2A task ids name their run).
    `answers_interrupt`: the input answers the thread's interrupt if one waits when the run
    starts (decided then, once the runs before it have ended). With tracing on, the run
    keeps the request's trace context, which its span continues when it executes."""
    check_messages(server.limits, "input", body.input)
    if body.command is not None:
        check_messages(server.limits, "command.update", body.command.update)
    check_sizes(server, body)
    await check_webhook(server, body.webhook)
    if thread_id is not None and body.on_completion == "delete":
        raise Unprocessable(
            "on_completion: 'delete' applies to stateless runs (POST /runs…), whose thread is "
            "made for them; a thread's run keeps its thread — delete it with DELETE "
            "/threads/{thread_id}, or leave on_completion out"
        )
    assistant = await lookup.get_assistant(server, body.assistant_id)
    # Over a budget of the user's or the agent's: 429 before anything is created.
    await server.engine.admit(caller.user)
    # A thread the run creates has the run's metadata and names its graph and assistant;
    # an existing one gets the names when the run starts (engine).
    labels = {**(body.metadata or {}), **thread_labels(assistant.graph_id, assistant.assistant_id)}
    stream_mode = None
    if wait:  # a waiting client gets the final values
        stream_mode = list(dict.fromkeys([*normalize_modes(body.stream_mode), "values"]))
    if thread_id is None:
        if body.is_resume:
            raise BadRequest(
                "a resume (command.resume) needs the thread of the interrupted run — "
                "send it to /threads/{thread_id}/runs",
            )
        temporary = body.on_completion != "keep"
        thread_id = new_id()
        await server.storage.threads.create(Thread(thread_id, metadata=caller.stamp(labels)))
        run = body.to_run(thread_id, assistant.assistant_id, user=caller.user,
                          operator=caller.operator, temporary=temporary,
                          stream_mode=stream_mode, run_id=run_id)  # fmt: skip
    else:
        lookup.check_uuid("thread_id", thread_id)
        named = (body.checkpoint or {}).get("thread_id")
        if named and named != thread_id:
            raise Unprocessable(
                f"checkpoint.thread_id: {named!r} is not the run's thread ({thread_id}) — a "
                "run resumes from a checkpoint of its own thread; leave thread_id out"
            )
        thread = await server.storage.threads.get(thread_id)
        if thread is not None and not caller.owns(thread.metadata):
            raise not_found("thread", thread_id)
        # From a checkpoint (time travel): one the thread has, else nothing to start from
        # (the executor gives `checkpoint_id` precedence, as here).
        ref = body.checkpoint or {}
        config = thread_config(
            thread_id,
            checkpoint_ns=ref.get("checkpoint_ns") or None,
            checkpoint_id=body.checkpoint_id or ref.get("checkpoint_id") or None,
        )
        await check_checkpoint(server, thread_id, config)
        if thread is None:
            if body.if_not_exists != "create":
                raise NotFound(
                    f"thread {thread_id!r} not found — create it first (POST /threads) or "
                    'send "if_not_exists": "create"',
                )
            thread = Thread(thread_id=thread_id, metadata=caller.stamp(labels))
            if not await server.storage.threads.create(thread):
                raise Conflict(f"thread {thread_id!r} was created meanwhile — send the run again")
        run = body.to_run(
            thread_id, assistant.assistant_id, user=caller.user, operator=caller.operator,
            stream_mode=stream_mode, run_id=run_id,
        )  # fmt: skip
        if answers_interrupt:
            run.kwargs[ANSWERS_INTERRUPT] = True
    carried = trace_context()  # the request's: the run's span continues its trace
    if carried:
        run.kwargs[TRACE_CONTEXT] = carried
    return await server.engine.submit(run)  # ThreadBusyError: 409


async def check_webhook(server: Server, url: str | None) -> None:
    """422 naming `webhook` when runs may not be delivered to `url` (engine/egress.py)."""
    if url is None:
        return
    try:
        await server.engine.webhooks.check(url)
    except Refused as exc:
        raise Unprocessable(f"webhook: {exc}") from None


def check_sizes(server: Server, body: RunCreate) -> None:
    """Refuse (413) a run whose events could not carry what it sends: an input or command
    larger than an event may be, or metadata and tags, which every message chunk repeats,
    larger than their share of it."""
    limits = server.limits
    check_event_size(limits, "input", body.input)
    if body.command is not None:
        check_event_size(limits, "command", body.command.model_dump(exclude_unset=True))
    config = body.config or {}
    repeated = {"metadata": body.metadata, "config.metadata": config.get("metadata"),
                "config.tags": config.get("tags")}  # fmt: skip
    check_event_size(limits, " and ".join(repeated), list(repeated.values()), repeated=True)
