"""Where A2A tasks live: in memory while this server follows them, and in our run records.

`RunTaskStore` is the SDK's `InMemoryTaskStore` (tasks kept per owner: a signed-in user's
are theirs alone) with two additions:

- a task it does not hold — one that ended long ago and was dropped (it keeps the last
  `KEEP` ended tasks), or one from before a restart — is rebuilt from the run its id names
  (`"{contextId}:{run_id}"`): its state follows the run's status, and only the owner of the
  run's thread sees it. Its history and artifacts are not rebuilt: the conversation itself
  is the thread, readable through the LangGraph API.
- a task saved as canceled cancels its run if the run still goes on (a task cancelled when
  this server no longer follows it: after a restart, the run was requeued).

Several replicas each hold their own tasks: a multi-replica deployment needs a shared task
store (a later issue); until then, a task's id still finds its state on any replica through
the run records.
"""

from __future__ import annotations

from collections import OrderedDict

from a2a.helpers import new_text_message
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Task, TaskState, TaskStatus

from agentctl.server import lookup
from agentctl.server.a2a.context import (
    RUN_ID_KEY,
    TASK_METADATA_KEY,
    caller_in,
    owner_context,
)
from agentctl.server.context import Server
from agentctl.storage.base import FINAL_RUN_STATUSES, Run

KEEP = 10_000
LATER_RUNS = 100  # how far back a thread's runs are searched for a task's latest run
ENDED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
    }
)
_RUN_STATES = {
    "pending": TaskState.TASK_STATE_SUBMITTED,
    "running": TaskState.TASK_STATE_WORKING,
    "success": TaskState.TASK_STATE_COMPLETED,
    "error": TaskState.TASK_STATE_FAILED,
    "timeout": TaskState.TASK_STATE_FAILED,
    "interrupted": TaskState.TASK_STATE_CANCELED,  # unless its thread waits for input
}


class RunTaskStore(TaskStore):
    def __init__(self, server: Server, keep: int = KEEP) -> None:
        self.server = server
        self.keep = keep
        self._memory = InMemoryTaskStore()
        self._ended: OrderedDict[str, str] = OrderedDict()  # ended task id → owner
        self._new: set[str] = set()  # tasks about to be created: not to be rebuilt from runs

    def reserve(self, task_id: str) -> None:
        """`task_id` is a new task: until it is saved, its run is not the task."""
        self._new.add(task_id)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await self._memory.save(task, context)
        self._new.discard(task.id)
        if task.status.state in ENDED:
            self._ended[task.id] = context.user.user_name
            self._ended.move_to_end(task.id)
            while len(self._ended) > self.keep:
                dropped, owner = self._ended.popitem(last=False)
                await self._memory.delete(dropped, owner_context(owner))
        else:
            self._ended.pop(task.id, None)
        if task.status.state == TaskState.TASK_STATE_CANCELED:
            await self._cancel_run(task.id)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        task = await self._memory.get(task_id, context)
        if task is not None:
            return task
        return await self._from_run(task_id, context)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        return await self._memory.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self._ended.pop(task_id, None)
        await self._memory.delete(task_id, context)

    async def _run_of(self, task_id: str) -> Run | None:
        thread_id, _, run_id = task_id.partition(":")
        run = await self.server.storage.runs.get(run_id) if run_id else None
        return run if run is not None and run.thread_id == thread_id else None

    async def _from_run(self, task_id: str, context: ServerCallContext) -> Task | None:
        if task_id in self._new:
            return None
        run = await self._run_of(task_id)
        if run is None or not await lookup.owns_thread(self.server, run, caller_in(context)):
            return None
        # A task resumed after an approval gate goes on in later runs: its state is the last's.
        later = await self.server.storage.runs.list(
            run.thread_id, status=None, limit=LATER_RUNS, offset=0
        )
        run = next((r for r in later if r.metadata.get(TASK_METADATA_KEY) == task_id), run)
        state = _RUN_STATES[run.status]
        if run.status == "interrupted":
            thread = await self.server.storage.threads.get(run.thread_id)
            if thread is not None and thread.interrupts:
                state = TaskState.TASK_STATE_INPUT_REQUIRED
        status = TaskStatus(state=state, timestamp=run.updated_at)
        if run.error:
            status.message.CopyFrom(
                new_text_message(
                    f"{run.error.get('error')}: {run.error.get('message')}",
                    context_id=run.thread_id,
                    task_id=task_id,
                )
            )
        return Task(
            id=task_id,
            context_id=run.thread_id,
            status=status,
            metadata={RUN_ID_KEY: run.run_id},
        )

    async def _cancel_run(self, task_id: str) -> None:
        run = await self._run_of(task_id)
        if run is not None and run.status not in FINAL_RUN_STATUSES:
            await self.server.engine.cancel(run)
