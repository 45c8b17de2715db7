"""What one A2A message asks of the agent: a run on the thread its `contextId` names.

`TurnBuilder` is the SDK's `RequestContextBuilder` for our server. Before any task is created
it fixes the ids — `contextId` is the thread (a new UUID when the message has none), a new
task is `"{contextId}:{run_id}"` — checks that the thread is the caller's, and decides what
the run is: new input, or, when the thread waits at an interrupt (an approval gate, a
request to connect an account), the resume of the interrupted run. Anything wrong is an A2A
error to the caller, and no task is made: a part the agent cannot take (a file, or a media
type other than text or JSON) is -32005.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from a2a.helpers import get_data_parts, get_text_parts
from a2a.server.agent_execution import RequestContext, RequestContextBuilder
from a2a.server.context import ServerCallContext
from a2a.types import Message, Part, SendMessageRequest, Task
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError

from agentctl import serde
from agentctl.server.a2a.card import JSON, TEXT
from agentctl.server.a2a.context import TASK_METADATA_KEY, assistant_in, caller_in
from agentctl.server.a2a.tasks import LATER_RUNS, WAITING, RunTaskStore, task_run_id
from agentctl.server.a2a.waiting import is_approval, is_connection, pending_interrupts
from agentctl.server.access import Caller
from agentctl.server.context import Server
from agentctl.server.run_requests import CommandBody, RunCreate
from agentctl.storage.base import Assistant, new_id

TURN = "agentctl.turn"
APPROVE = frozenset({"approve", "approved", "yes", "y", "ok", "accept", "allow"})
REJECT = frozenset({"reject", "rejected", "no", "n", "deny", "decline"})


@dataclass(frozen=True)
class Turn:
    """A run to start for the message: as `caller`, on thread `thread_id`, with id `run_id`."""

    caller: Caller
    assistant: Assistant
    thread_id: str
    run_id: str
    task_id: str
    body: RunCreate

    @property
    def is_resume(self) -> bool:
        return self.body.is_resume


def turn_of(context: RequestContext) -> Turn:
    turn = context.call_context.state.get(TURN)
    if not isinstance(turn, Turn):
        raise InvalidParamsError(message="the message was not prepared for a run")
    return turn


class TurnBuilder(RequestContextBuilder):
    def __init__(self, server: Server, tasks: RunTaskStore) -> None:
        self.server = server
        self.tasks = tasks

    async def build(
        self,
        context: ServerCallContext,
        params: SendMessageRequest | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        task: Task | None = None,
    ) -> RequestContext:
        if params is None:  # not a message: nothing to prepare
            return RequestContext(context, task_id=task_id, context_id=context_id, task=task)
        caller, storage = caller_in(context), self.server.storage
        for number, part in enumerate(params.message.parts, 1):
            _check_part(number, part)
        if task_id and not context_id:  # continuing a task: its context
            known = await self.tasks.get(task_id, context)
            context_id = known.context_id if known is not None else None
        thread_id = _checked_context_id(context_id or params.message.context_id or new_id())
        thread = await storage.threads.get(thread_id)
        if thread is not None and not caller.owns(thread.metadata):
            raise InvalidParamsError(message=f"context {thread_id} not found")
        interrupts = pending_interrupts(thread)
        what: dict[str, Any] = (
            {"command": _resume_command(params.message, interrupts)}
            if interrupts
            else {"input": {"messages": [{"role": "user", "content": _text(params.message)}]}}
        )
        run_id = new_id()
        if interrupts and not task_id:  # the answer to the question of the waiting task
            task_id = await self._waiting_task(thread_id, context)
        if not task_id:
            task_id = f"{thread_id}:{run_id}"
            self.tasks.reserve(task_id)
        assistant = assistant_in(context)
        body = RunCreate(
            assistant_id=assistant.assistant_id,
            stream_mode="messages-tuple",
            if_not_exists="create",
            metadata={TASK_METADATA_KEY: task_id},
            **what,
        )
        context.state[TURN] = Turn(caller, assistant, thread_id, run_id, task_id, body)
        return RequestContext(
            call_context=context,
            request=params,
            task_id=task_id,
            context_id=thread_id,
            task=task,
        )

    async def _waiting_task(self, thread_id: str, context: ServerCallContext) -> str | None:
        """The task that stopped at the thread's interrupt, if it still waits for input: the
        interrupted run's, or, for a run no message started (the server resumed the task's
        run once the user connected an account), the latest task of the thread."""
        runs = self.server.storage.runs
        interrupted = await runs.list(thread_id, status="interrupted", limit=1, offset=0)
        if not interrupted:
            return None
        task_id = interrupted[0].metadata.get(TASK_METADATA_KEY)
        if task_id is None:
            later = await runs.list(thread_id, status=None, limit=LATER_RUNS, offset=0)
            task_id = next((t for r in later if (t := r.metadata.get(TASK_METADATA_KEY))), None)
        if not isinstance(task_id, str):
            return None
        task = await self.tasks.get(task_id, context)
        waiting = (
            task is not None
            and task.status.state in WAITING
            and task_run_id(task) == interrupted[0].run_id
        )
        return task_id if waiting else None


def _checked_context_id(value: str) -> str:
    try:
        uuid.UUID(value)
    except ValueError:
        raise InvalidParamsError(
            message=f"contextId {value!r} is not a UUID — leave it out to start a conversation, "
            "or send the contextId of one"
        ) from None
    return value


def _check_part(number: int, part: Part) -> None:
    """-32005 for a part the agent cannot read: it takes text (any `text/*`) and JSON data."""
    kind = part.WhichOneof("content")
    media_type = part.media_type.partition(";")[0].strip().lower()
    if kind == "text" and (not media_type or media_type.startswith("text/")):
        return
    if kind == "data" and media_type in ("", JSON):
        return
    if kind is None and not media_type:
        return  # an empty part: nothing to read
    what = "a file" if kind in ("raw", "url") else f"a {kind or 'empty'} part"
    raise ContentTypeNotSupportedError(
        message=f"part {number} is {what} of type {media_type or 'unknown'} — this agent "
        f"takes text ({TEXT}) and data ({JSON}) parts only"
    )


def _text(message: Message) -> str:
    """The message as the agent reads it: its text parts, and its data parts as JSON."""
    pieces = get_text_parts(message.parts)
    pieces += [serde.dumps(data).decode() for data in get_data_parts(message.parts)]
    text = "\n".join(piece for piece in pieces if piece)
    if not text:
        raise InvalidParamsError(message="the message has no text — send a text or data part")
    return text


def _resume_command(message: Message, interrupts: list[dict[str, Any]]) -> CommandBody:
    """The `command` resuming the interrupts with the message's answer: a data part
    `{"resume": value}` or `{"decisions": [...]}` as it is, or a text reply."""
    data = [d for d in get_data_parts(message.parts) if isinstance(d, dict)]
    explicit = [d["resume"] for d in data if "resume" in d]
    if explicit:
        return CommandBody(resume=explicit[0])
    decisions = [d for d in data if "decisions" in d]
    if decisions:
        return CommandBody(resume=_per_interrupt(interrupts, lambda _: decisions[0]))
    text = "\n".join(get_text_parts(message.parts)).strip()
    if all(is_connection(i) for i in interrupts):  # the tool checks again for the user's token
        return CommandBody(resume=_per_interrupt(interrupts, lambda _: text or "retry"))
    if not all(is_approval(i) for i in interrupts):
        if not text:
            raise InvalidParamsError(message="the agent is waiting for an answer — send text")
        return CommandBody(resume=_per_interrupt(interrupts, lambda _: text))
    word, _, reason = text.partition(":")
    word = word.strip().lower()
    if word in APPROVE:
        decision: dict[str, Any] = {"type": "approve"}
    elif word in REJECT:
        decision = {"type": "reject", **({"message": reason.strip()} if reason.strip() else {})}
    else:
        raise InvalidParamsError(
            message='the agent is waiting for an approval — reply "approve" or "reject: '
            '<reason>", or send a data part {"decisions": [...]} (one per action request)'
        )
    return CommandBody(
        resume=_per_interrupt(
            interrupts,
            lambda i: {"decisions": [decision] * len(i["value"].get("action_requests") or [])},
        )
    )


def _per_interrupt(interrupts: list[dict[str, Any]], answer: Any) -> Any:
    """One resume value for one interrupt; `{interrupt id: value}` for several."""
    if len(interrupts) == 1:
        return answer(interrupts[0])
    return {i["id"]: answer(i) for i in interrupts}
