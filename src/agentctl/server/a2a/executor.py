"""The agent behind the SDK's `AgentExecutor`: each message is an ordinary run of the server.

The run is started as the caller (`start_run`: their thread, their user identity) and
followed through the event log, like any stream of the LangGraph API. What the task shows:

- `submitted` (a new task), then `working` (metadata `runId`: the run in the LangGraph API;
  A2A 1.0 keys are camelCase);
- the agent's words as they stream: one artifact per AI message, its text in chunks
  (`append`), closed by a last chunk that holds the whole text (`append: false`, so a
  client that keeps the artifact by replacing gets it whole);
- at the end `completed`; `input-required` when the run stopped at an approval gate, and
  `auth-required` when it stopped for the user to connect their account to an MCP server
  (`a2a/waiting.py`), with what it waits for in the status message (text, and the
  interrupts as a data part); `failed` with the error; `canceled` when the run was
  cancelled. A run resumed once the user connected goes on as the same task
  (`a2a/tasks.py`).
"""

from __future__ import annotations

from typing import Any

from a2a.helpers import new_task, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Part, TaskState

from agentctl import serde
from agentctl.engine.streams import follow, run_start
from agentctl.engine.wire import END_EVENT
from agentctl.errors import RequestError
from agentctl.server.a2a.context import RUN_ID_KEY
from agentctl.server.a2a.turns import Turn, turn_of
from agentctl.server.a2a.waiting import pending_interrupts, waiting_parts, waiting_state
from agentctl.server.content import text_of
from agentctl.server.context import Server
from agentctl.server.run_streams import deletion_error
from agentctl.server.services.runs import start_run
from agentctl.storage.base import FINAL_RUN_STATUSES, Run

HEARTBEAT_SECONDS = 30.0
AI_TYPES = frozenset({"AIMessageChunk", "ai"})


class RunExecutor(AgentExecutor):
    def __init__(self, server: Server) -> None:
        self.server = server
        self._runs: dict[str, Run] = {}  # task id → the run it follows
        self._cancelled: set[str] = set()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        turn = turn_of(context)
        updater = TaskUpdater(event_queue, turn.task_id, turn.thread_id)
        if context.current_task is None:
            history = [context.message] if context.message is not None else []
            await event_queue.enqueue_event(
                new_task(
                    turn.task_id, turn.thread_id, TaskState.TASK_STATE_SUBMITTED, history=history
                )
            )
        try:
            run = await start_run(
                self.server, turn.caller, turn.body, turn.thread_id, run_id=turn.run_id
            )
        except RequestError as exc:
            await updater.failed(updater.new_agent_message([new_text_part(str(exc))]))
            return
        self._runs[turn.task_id] = run
        try:
            await updater.update_status(
                TaskState.TASK_STATE_WORKING, metadata={RUN_ID_KEY: run.run_id}
            )
            await self._follow(turn, run, updater)
        finally:
            self._runs.pop(turn.task_id, None)
            self._cancelled.discard(turn.task_id)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the task's run (if it still goes on) and say so."""
        task_id = context.task_id or ""
        run = self._runs.get(task_id)
        if run is not None:  # `execute` follows it: it is to stop without a word
            self._cancelled.add(task_id)
            current = await self.server.storage.runs.get(run.run_id)
            if current is not None and current.status not in FINAL_RUN_STATUSES:
                await self.server.engine.cancel(current)
        await TaskUpdater(event_queue, task_id, context.context_id or "").cancel()

    async def _follow(self, turn: Turn, run: Run, updater: TaskUpdater) -> None:
        answer = Answer(updater)
        error: dict[str, Any] | None = None
        status = "error"
        async for event in follow(
            self.server.storage,
            run.thread_id,
            run_id=run.run_id,
            last_event_id=None,
            start=run_start(run),
            heartbeat=HEARTBEAT_SECONDS,
            stop=self.server.deleted,
        ):
            if event is None:
                continue
            if event.event == "messages":
                await answer.add(serde.loads(event.data)[0])
            elif event.event == "error":
                error = serde.loads(event.data)
            elif event.event == END_EVENT:
                status = serde.loads(event.data)["status"]
        await answer.close()
        if self.server.deleted.is_set() and status == "error" and error is None:
            error = deletion_error(self.server)
        if turn.task_id in self._cancelled:  # `cancel` said it already
            return
        if status == "success":
            await updater.complete()
        elif status == "interrupted":
            await self._interrupted(run, updater)
        else:
            failure = error or {"error": "RunError", "message": f"the run ended: {status}"}
            text = f"{failure.get('error')}: {failure.get('message')}"
            await updater.failed(updater.new_agent_message([new_text_part(text)]))

    async def _interrupted(self, run: Run, updater: TaskUpdater) -> None:
        thread = await self.server.storage.threads.get(run.thread_id)
        interrupts = pending_interrupts(thread)
        if not interrupts:  # cancelled, not waiting
            await updater.cancel()
            return
        message = updater.new_agent_message(waiting_parts(interrupts))
        await updater.update_status(waiting_state(interrupts), message=message)


class Answer:
    """The AI messages of a run as artifacts, streamed chunk by chunk.

    A chunk is held until the next one arrives, so the last chunk of a message can say it is
    the last; it then carries the message's whole text and replaces the streamed parts."""

    def __init__(self, updater: TaskUpdater) -> None:
        self.updater = updater
        self.message_id: str | None = None
        self.text = ""
        self.held: str | None = None
        self.sent = False

    async def add(self, chunk: Any) -> None:
        if not isinstance(chunk, dict) or chunk.get("type") not in AI_TYPES:
            return
        text = text_of(chunk.get("content"))
        if not text:
            return
        message_id = str(chunk.get("id") or "response")
        if message_id != self.message_id:
            await self.close()
            self.message_id, self.text, self.sent = message_id, "", False
        elif self.held is not None:
            await self._send([new_text_part(self.held)], append=self.sent, last=False)
        self.held = text
        self.text += text

    async def close(self) -> None:
        """Send the held chunk as the last: the message's whole text."""
        if self.held is None:
            return
        self.held = None
        await self._send([new_text_part(self.text)], append=False, last=True)

    async def _send(self, parts: list[Part], *, append: bool, last: bool) -> None:
        await self.updater.add_artifact(
            parts,
            artifact_id=self.message_id,
            name="response",
            append=append,
            last_chunk=last,
        )
        self.sent = True
