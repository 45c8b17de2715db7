"""Where A2A tasks live: in the platform's storage (`Storage.a2a_tasks`), so every replica
answers for every task — `GetTask` with its artifacts, `ListTasks` — whichever ran it.

`RunTaskStore` is the SDK's `TaskStore`:

- While a replica follows a task (submitted, working) it keeps the task's latest version in
  memory, and stores it each time its state changes or a new artifact (an AI message)
  begins: not at each streamed chunk. Every replica thus sees the task's state and its
  finished messages; the replica running it sees the chunks too. A task that stops
  (ended, or waiting for input) is stored whole and leaves memory.
- A task is its owner's (the signed-in user who sent it): another user's is "not found";
  the operator and anonymous callers, who are not scoped, see every task.
- A task stored as submitted or working by a replica that no longer follows it (it
  stopped or died; its run was handed on) takes its state from its run once that ended.
- A task stored waiting (input-required, auth-required) whose run was resumed by a run no
  A2A message started — the server's, once the user connected the account the task waited
  for, or a client's through the LangGraph API — follows that run: working, then its end.
- A task that was never stored (from before tasks were) is rebuilt from the run its id
  names (`"{contextId}:{run_id}"`): its state follows the run's status; its artifacts are
  not rebuilt (the conversation itself is the thread, readable through the LangGraph API).
- A task saved as canceled cancels its run if the run still goes on (a task cancelled on
  another replica than the one running it, or after a restart, when the run was requeued).

Tasks are deleted with their context's thread.
"""

from __future__ import annotations

from typing import Any, cast

from a2a.helpers import new_message, new_text_message
from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Task, TaskState, TaskStatus
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import InvalidParamsError
from a2a.utils.task import ListTasksCursor, decode_list_tasks_cursor, encode_list_tasks_cursor
from google.protobuf.json_format import MessageToDict, ParseDict

from agentctl.server import lookup
from agentctl.server.a2a.context import RUN_ID_KEY, TASK_METADATA_KEY, caller_in
from agentctl.server.a2a.waiting import pending_interrupts, waiting_parts, waiting_state
from agentctl.server.access import Caller
from agentctl.server.context import Server
from agentctl.storage.base import FINAL_RUN_STATUSES, A2ATask, A2ATaskFilter, Run, now

LATER_RUNS = 100  # how far back a thread's runs are searched for a task's latest run
NO_TIME = -1  # the position of a task whose status has no timestamp: listed last
FOLLOWED = frozenset({TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING})
WAITING = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})
_RUN_STATES = {
    "pending": TaskState.TASK_STATE_SUBMITTED,
    "running": TaskState.TASK_STATE_WORKING,
    "success": TaskState.TASK_STATE_COMPLETED,
    "error": TaskState.TASK_STATE_FAILED,
    "timeout": TaskState.TASK_STATE_FAILED,
    "interrupted": TaskState.TASK_STATE_CANCELED,  # unless its thread waits (`waiting.py`)
}
# What a stored version of a task shows: its state and its artifacts' ids.
Shape = tuple[int, tuple[str, ...]]


class RunTaskStore(TaskStore):
    def __init__(self, server: Server) -> None:
        self.server = server
        self._live: dict[str, tuple[Task, str | None]] = {}  # followed here: task, owner
        self._stored: dict[str, Shape] = {}  # the shape last stored of each followed task
        self._new: set[str] = set()  # tasks about to be created: not to be rebuilt from runs

    def reserve(self, task_id: str) -> None:
        """`task_id` is a new task: until it is saved, its run is not the task."""
        self._new.add(task_id)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        owner = caller_in(context).user
        shape: Shape = (task.status.state, tuple(a.artifact_id for a in task.artifacts))
        if self._stored.get(task.id) != shape:
            await self.server.storage.a2a_tasks.put(_record(task, owner))
        self._new.discard(task.id)
        if task.status.state in FOLLOWED:
            self._live[task.id] = (_copy(task), owner)
            self._stored[task.id] = shape
        else:
            self._live.pop(task.id, None)
            self._stored.pop(task.id, None)
        if task.status.state == TaskState.TASK_STATE_CANCELED:
            await self._cancel_run(task.id)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        caller = caller_in(context)
        live = self._live.get(task_id)
        if live is not None:
            task, owner = live
            return _copy(task) if _sees(caller, owner) else None
        stored = await self.server.storage.a2a_tasks.get(task_id)
        if stored is not None:
            return await self._settled(_task(stored)) if _sees(caller, stored.owner) else None
        return await self._from_run(task_id, caller)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        after: tuple[int, str] | None = None
        if params.page_token:
            cursor = decode_list_tasks_cursor(params.page_token)
            if cursor is None:
                raise InvalidParamsError(message=f"Invalid page token: {params.page_token}")
            after = (_position_of(cursor.timestamp_ns), cursor.task_id)
        since = None
        if params.HasField("status_timestamp_after"):
            since = params.status_timestamp_after.ToNanoseconds()
        where = A2ATaskFilter(
            owner=caller_in(context).user,
            context_id=params.context_id or None,
            state=TaskState.Name(params.status) if params.status else None,
            since=since,
            after=after,
        )
        page_size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
        found, total = await self.server.storage.a2a_tasks.list(where, page_size + 1)
        tasks = [await self._freshest(record) for record in found[:page_size]]
        next_token = None
        if len(found) > page_size:
            last = found[page_size - 1]
            timestamp = None if last.position == NO_TIME else last.position
            next_token = encode_list_tasks_cursor(ListTasksCursor(timestamp, last.task_id))
        return ListTasksResponse(
            tasks=tasks, next_page_token=next_token, total_size=total, page_size=page_size
        )

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        if await self.get(task_id, context) is None:
            return
        self._live.pop(task_id, None)
        self._stored.pop(task_id, None)
        await self.server.storage.a2a_tasks.delete(task_id)

    async def _freshest(self, record: A2ATask) -> Task:
        """The task as this replica knows it best: its latest version when followed here."""
        live = self._live.get(record.task_id)
        return _copy(live[0]) if live is not None else await self._settled(_task(record))

    async def _settled(self, task: Task) -> Task:
        """A stored task left submitted or working by a replica that no longer follows it
        (stopped, or died, while its run was handed on and ended elsewhere): its state is
        its run's once that run has ended. A stored task waiting at its run's interrupt,
        whose run was resumed by another (`_latest_run`): its state is that run's. Its
        artifacts are those last stored; the whole conversation is the thread's."""
        if task.status.state in FOLLOWED:
            run = await self._latest_run(task.id)
            if run is not None and run.status in FINAL_RUN_STATUSES:
                task.status.CopyFrom(await self._status_of(run, task.id))
        elif task.status.state in WAITING:
            run = await self._latest_run(task.id)
            if run is not None and run.run_id != task_run_id(task):
                task.status.CopyFrom(await self._status_of(run, task.id))
                task.metadata[RUN_ID_KEY] = run.run_id
        return task

    async def _run_of(self, task_id: str) -> Run | None:
        thread_id, _, run_id = task_id.partition(":")
        run = await self.server.storage.runs.get(run_id) if run_id else None
        return run if run is not None and run.thread_id == thread_id else None

    async def _latest_run(self, task_id: str) -> Run | None:
        """The run a task's state is: a task resumed after an approval gate goes on in later
        runs of its thread — those its messages started, and those that resumed one of its
        runs while the thread had no other run since (the server's, once the user connected
        an account the run waited for)."""
        run = await self._run_of(task_id)
        if run is None:
            return None
        later = await self.server.storage.runs.list(
            run.thread_id, status=None, limit=LATER_RUNS, offset=0
        )
        latest, goes_on = run, False
        for other in reversed(later):  # oldest first
            tag = other.metadata.get(TASK_METADATA_KEY)
            if tag == task_id or (goes_on and tag is None and _resumes(other, latest)):
                latest, goes_on = other, True
            else:
                goes_on = False
        return latest

    async def _from_run(self, task_id: str, caller: Caller) -> Task | None:
        if task_id in self._new:
            return None
        run = await self._latest_run(task_id)
        if run is None or not await lookup.owns_thread(self.server, run, caller):
            return None
        return Task(
            id=task_id,
            context_id=run.thread_id,
            status=await self._status_of(run, task_id),
            metadata={RUN_ID_KEY: run.run_id},
        )

    async def _status_of(self, run: Run, task_id: str) -> TaskStatus:
        """The status of the task whose state is `run`'s."""
        status = TaskStatus(state=_RUN_STATES[run.status], timestamp=run.updated_at)
        if run.status == "interrupted":
            thread = await self.server.storage.threads.get(run.thread_id)
            interrupts = pending_interrupts(thread)
            if interrupts:
                status.state = waiting_state(interrupts)
                parts = waiting_parts(interrupts)
                status.message.CopyFrom(
                    new_message(parts, context_id=run.thread_id, task_id=task_id)
                )
        if run.error:
            status.message.CopyFrom(
                new_text_message(
                    f"{run.error.get('error')}: {run.error.get('message')}",
                    context_id=run.thread_id,
                    task_id=task_id,
                )
            )
        return status

    async def _cancel_run(self, task_id: str) -> None:
        run = await self._run_of(task_id)
        if run is not None and run.status not in FINAL_RUN_STATUSES:
            await self.server.engine.cancel(run)


def task_run_id(task: Task) -> str | None:
    """The run the task's metadata names (the last one it showed)."""
    return str(task.metadata[RUN_ID_KEY]) if RUN_ID_KEY in task.metadata else None


def _resumes(run: Run, interrupted: Run) -> bool:
    """Whether `run` resumes the interrupt `interrupted` (the run before it) stopped at."""
    command = run.kwargs.get("command")
    return (
        interrupted.status == "interrupted"
        and isinstance(command, dict)
        and "resume" in command
        and run.created_at >= interrupted.created_at
    )


def _sees(caller: Caller, owner: str | None) -> bool:
    """Whether `caller` may see a task of `owner`'s."""
    return caller.user is None or caller.user == owner


def _position_of(timestamp_ns: int | None) -> int:
    return NO_TIME if timestamp_ns is None else timestamp_ns


def _record(task: Task, owner: str | None) -> A2ATask:
    timestamp = task.status.timestamp.ToNanoseconds() if task.status.HasField("timestamp") else None
    return A2ATask(
        task_id=task.id,
        context_id=task.context_id,
        owner=owner,
        state=TaskState.Name(task.status.state),
        position=_position_of(timestamp),
        task=cast("dict[str, Any]", MessageToDict(task)),
        updated_at=now(),
    )


def _task(record: A2ATask) -> Task:
    return cast(Task, ParseDict(record.task, Task(), ignore_unknown_fields=True))


def _copy(task: Task) -> Task:
    copy = Task()
    copy.CopyFrom(task)
    return copy
