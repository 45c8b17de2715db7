"""The run engine: accepts runs, executes them on bounded workers, cancels them, and
retries the ones a restart interrupted.

A new run wakes the dispatcher at once (no polling); runs of one thread execute one at a
time, in order; a run accepted is in the database before the client hears of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta
from typing import Any, Literal

from agentctl import serde
from agentctl.engine import executor
from agentctl.engine.deployment import Deployment
from agentctl.engine.wire import END_EVENT
from agentctl.storage.base import Run, RunStatus, Storage, now

log = logging.getLogger("agentctl.engine")

CancelAction = Literal["interrupt", "rollback"]


class ThreadBusyError(Exception):
    """`multitask_strategy: reject` on a thread with a run in flight."""


class RunEngine:
    def __init__(
        self,
        storage: Storage,
        deployment: Deployment,
        *,
        workers: int = 16,
        run_timeout: float | None = None,
    ) -> None:
        self.storage = storage
        self.deployment = deployment
        self.workers = workers
        self.run_timeout = run_timeout
        self._slots = asyncio.Semaphore(workers)
        self._wake = asyncio.Event()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._cancel_actions: dict[str, CancelAction] = {}
        self._dispatcher: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Requeue the runs a previous process left running, then start dispatching."""
        requeued = await self.storage.runs.requeue_running()
        for run in requeued:
            log.info("run %s was interrupted by a restart; retrying it", run.run_id)
        self._dispatcher = asyncio.create_task(self._dispatch(), name="agentctl-dispatcher")

    async def stop(self) -> None:
        """Stop taking runs and cancel those in flight; they stay `running` in storage and
        are retried, from their last checkpoint, by the next start."""
        if self._dispatcher is not None:
            self._dispatcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._dispatcher
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel("shutdown")
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- accepting runs ----------------------------------------------------------------

    async def submit(self, run: Run) -> Run:
        """Apply the run's multitask strategy against the thread's runs in flight, store the
        run as `pending` and wake a worker. Raises `ThreadBusyError` for `reject`."""
        if not run.temporary:
            active = await self.storage.runs.active(run.thread_id)
            if active:
                strategy = run.multitask_strategy
                if strategy == "reject":
                    raise ThreadBusyError(
                        f"thread {run.thread_id} is already running a task — wait for it, "
                        "cancel it, or use multitask_strategy enqueue, interrupt or rollback"
                    )
                if strategy in ("interrupt", "rollback"):
                    for other in active:
                        await self.cancel(
                            other, "interrupt" if strategy == "interrupt" else "rollback"
                        )
        if run.kwargs.get("after_seconds"):
            run.not_before = now() + timedelta(seconds=float(run.kwargs["after_seconds"]))
        await self.storage.runs.create(run)
        self._wake.set()
        return run

    async def cancel(self, run: Run, action: CancelAction = "interrupt") -> None:
        """Stop `run`: a pending run never starts, a running one is cancelled where it is.
        `rollback` also deletes the run and the checkpoints it wrote."""
        task = self._tasks.get(run.run_id)
        if task is not None:
            if run.run_id in self._cancel_actions:
                return  # already stopping: a second cancel would cut its clean-up short
            self._cancel_actions[run.run_id] = action
            task.cancel("cancelled")
            return
        if run.status == "pending":
            if action == "rollback":
                await self.storage.runs.delete(run.run_id)
            else:
                await self.storage.runs.set_status(run.run_id, "interrupted", "cancelled")
            await self._append_end(run, "interrupted")

    def is_executing(self, run_id: str) -> bool:
        return run_id in self._tasks

    async def stopped(self, run_id: str, timeout: float = 10.0) -> None:
        """Wait (at most `timeout` s) until `run_id` is not executing here."""
        task = self._tasks.get(run_id)
        if task is not None:
            await asyncio.wait([task], timeout=timeout)

    # -- executing runs ----------------------------------------------------------------

    async def _dispatch(self) -> None:
        while True:
            await self._slots.acquire()
            run = await self.storage.runs.claim(now())
            if run is None:
                self._slots.release()
                await self._sleep_until_woken()
                continue
            task = asyncio.create_task(self._run(run), name=f"run-{run.run_id}")
            self._tasks[run.run_id] = task

    async def _sleep_until_woken(self) -> None:
        self._wake.clear()
        timeout = None
        wakeup = await self.storage.runs.next_wakeup()
        if wakeup is not None:
            timeout = max(0.0, (wakeup - now()).total_seconds())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)

    async def _run(self, run: Run) -> None:
        try:
            await self._execute(run)
        except asyncio.CancelledError:
            if self._cancel_actions.get(run.run_id) is None:
                raise  # shutdown: the run stays `running` and is retried on restart
        except Exception:
            log.exception("run %s could not be executed", run.run_id)
            failure = {"error": "InternalError", "message": "the server failed to run it"}
            await self._finish(run, None, executor.Outcome("error", failure))
        finally:
            self._tasks.pop(run.run_id, None)
            self._cancel_actions.pop(run.run_id, None)
            self._slots.release()
            self._wake.set()

    async def _execute(self, run: Run) -> None:
        graph = self.deployment.runtime.graph  # the run keeps this revision to the end
        assistant = await self.storage.assistants.get(run.assistant_id)
        config = executor.run_config(run, assistant, self.deployment)
        resume = await executor.resumes_from_checkpoint(self.storage, run)
        await self.storage.threads.update(run.thread_id, status="busy")

        async def publish(event: str, data: Any) -> None:
            await self.storage.events.append(run.thread_id, run.run_id, event, serde.dumps(data))

        try:
            async with asyncio.timeout(self.run_timeout):
                outcome = await executor.execute(run, graph, config, publish, resume=resume)
        except TimeoutError:
            message = f"the run exceeded {self.run_timeout} s"
            outcome = executor.Outcome("timeout", {"error": "TimeoutError", "message": message})
            await publish("error", outcome.error)
        except asyncio.CancelledError:
            action = self._cancel_actions.get(run.run_id)
            if action is None:
                raise
            await self._finish_cancelled(run, graph, action)
            raise
        await self._finish(run, graph, outcome)

    async def _finish(self, run: Run, graph: Any, outcome: executor.Outcome) -> None:
        await self.storage.runs.finish(run.run_id, outcome.status, error=outcome.error)
        await self._settle_thread(run, graph, outcome.status)
        await self._append_end(run, outcome.status)
        if run.temporary:
            await self.storage.threads.delete(run.thread_id)

    async def _finish_cancelled(self, run: Run, graph: Any, action: CancelAction) -> None:
        if action == "rollback":
            await self.storage.runs.delete(run.run_id)
            await self.storage.checkpointer.adelete_for_run(run.thread_id, run.run_id)
        else:
            await self.storage.runs.set_status(run.run_id, "interrupted", "cancelled")
        await self._settle_thread(run, graph, "interrupted" if action == "interrupt" else "success")
        await self._append_end(run, "interrupted")
        if run.temporary:
            await self.storage.threads.delete(run.thread_id)

    async def _settle_thread(self, run: Run, graph: Any, status: RunStatus) -> None:
        """The thread's status and pending interrupts after `run`."""
        interrupts: dict[str, list[dict[str, Any]]] = {}
        if status == "interrupted" and not run.temporary and graph is not None:
            state = await graph.aget_state({"configurable": {"thread_id": run.thread_id}})
            for task in state.tasks:
                if task.interrupts:
                    interrupts[task.id] = serde.to_jsonable(list(task.interrupts))
        thread_status = {"error": "error", "interrupted": "interrupted"}.get(status, "idle")
        if status == "interrupted" and not interrupts:
            thread_status = "idle"
        await self.storage.threads.update(
            run.thread_id,
            status=thread_status,  # type: ignore[arg-type]
            interrupts=interrupts,
        )

    async def _append_end(self, run: Run, status: RunStatus) -> None:
        data = serde.dumps({"run_id": run.run_id, "status": status})
        await self.storage.events.append(run.thread_id, run.run_id, END_EVENT, data)
