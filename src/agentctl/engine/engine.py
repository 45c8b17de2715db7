"""The run engine: accepts runs, executes them on bounded workers, cancels them, and
retries the ones whose process died.

A new run wakes the dispatchers of every replica at once (no polling); runs of one thread
execute one at a time, in order; a run accepted is in the database before the client hears
of it. A claimed run is leased: its replica renews the lease while it executes the run, and
a run whose lease expires (its replica died) is requeued and resumed from its last
checkpoint with `attempt` + 1, by whichever replica claims it. A replica that only stalled
past its lease is not trusted when it wakes: every write of an attempt is fenced
(storage/fence.py), and a refused write stops the attempt at once. A cancel reaches the run
wherever it executes, over the storage's bus.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import time
import uuid
from datetime import datetime, timedelta
from typing import Any, Literal

from agentctl import serde
from agentctl.aio import wait_all
from agentctl.engine import executor
from agentctl.engine.admission import DEFAULT_MAX_LAG, Admission
from agentctl.engine.budgets import budget_checker
from agentctl.engine.deployment import Deployment
from agentctl.engine.records import run_view
from agentctl.engine.streams import mark_start
from agentctl.engine.webhooks import Webhooks, payload_of
from agentctl.engine.wire import END_EVENT, within
from agentctl.errors import ThreadBusyError
from agentctl.metering import ledger as ledgers
from agentctl.metering.budgets import BudgetChecker, Standing
from agentctl.metering.ledger import Ledger
from agentctl.observability import bind_run, run_finished, run_span, run_started, tokens_used
from agentctl.project.model import Budgets
from agentctl.storage import fence as fencing
from agentctl.storage.base import Message, Run, RunStatus, Storage, ThreadUpdate, now
from agentctl.storage.fence import Fence, StaleAttempt
from agentctl.storage.outages import outages, ride_out, service_down

log = logging.getLogger("agentctl.engine")

CancelAction = Literal["interrupt", "rollback"]
# Why a run's task is cancelled: a client's cancel, or (the run does not end) its lease went
# to another replica. A task cancelled for none of these is stopped by its replica's shutdown.
StopReason = Literal["interrupt", "rollback", "lease lost"]
SHUTDOWN = "shutdown"
# How long a cancel waits for the run to stop: a run stops at its next await, so this is
# reached only when its replica died (then its lease expires and another one stops it).
STOP_TIMEOUT = 10.0
# How long a stop waits for runs already recording how they ended.
FINISH_TIMEOUT = 5.0


def thread_labels(graph_id: str, assistant_id: str) -> dict[str, str]:
    """What a run writes into its thread's metadata, as the reference does: the graph and
    the assistant it runs, which `threads/search` filters on (agent-chat-ui lists its
    history by `graph_id` or `assistant_id`) and `delete_threads` of an assistant finds."""
    return {"graph_id": graph_id, "assistant_id": assistant_id}


class RunEngine:
    def __init__(
        self,
        storage: Storage,
        deployment: Deployment,
        *,
        max_runs: int = 256,
        max_lag: float | None = DEFAULT_MAX_LAG,
        run_timeout: float | None = None,
        lease: float = 30.0,
        max_event_bytes: int | None = None,
        webhooks: Webhooks | None = None,
        restarted_by: str = "the server",
        budgets: Budgets | None = None,
        metering: bool = True,
    ) -> None:
        self.storage = storage
        # Whether runs count their tokens and store their usage and trace (`metering/`).
        self.metering = metering
        if not metering:
            log.info("AGENTCTL_METERING is off: runs store no usage and no trace, and token "
                     "and cost budgets count nothing")  # fmt: skip
        # The agent's `[budgets]` held to, with the operator's (`budgets`, the stricter wins).
        self.budgets: BudgetChecker = budget_checker(storage, budgets)
        # What starts this replica again ("`agentctl dev`"), for the message of a stop.
        self.restarted_by = restarted_by
        self.deployment = deployment
        self.max_runs = max_runs
        self.run_timeout = run_timeout
        self.max_event_bytes = max_event_bytes  # larger events are replaced (wire.within)
        self.lease = lease
        # Delivers the webhook of each run that ends here (engine/webhooks.py).
        self.webhooks = webhooks or Webhooks()
        # This process among the replicas: the holder of its runs' leases.
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        # Runs mostly wait on their model: a slot is cheap, and a full replica (at most
        # `max_runs`, fewer while its loop lags `max_lag`) leaves further runs pending in
        # storage, for any replica with a free slot.
        self.admission = Admission(max_runs, max_lag)
        self._wake = asyncio.Event()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        # The attempt of each run executing here: its fence and its task.
        self._attempts: dict[str, tuple[Fence, asyncio.Task[None]]] = {}
        self._cancel_actions: dict[asyncio.Task[None], StopReason] = {}
        # Runs recording how they ended: their status is no longer `running`, so their
        # lease is not renewed, yet they are not lost: they must not be stopped mid-way.
        self._finishing: set[asyncio.Task[None]] = set()
        # Cancels that arrived for a run this process claimed but had not started yet.
        self._early_cancels: dict[str, tuple[CancelAction, float]] = {}
        self._background: list[asyncio.Task[None]] = []
        # When each run executing here started (its webhook says so).
        self._started_at: dict[str, datetime] = {}

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Requeue the runs whose process died, then start dispatching and keeping leases."""
        self.storage.bus.subscribe("wake", self._on_wake)
        self.storage.bus.subscribe("cancel", self._on_cancel)
        try:
            await self._requeue_orphans()
        except Exception as exc:  # an outage (a full disk): `_keep_leases` requeues them
            if not self._noted_outage(exc):
                raise
        self._background = [
            asyncio.create_task(self._dispatch(), name="agentctl-dispatcher"),
            asyncio.create_task(self._keep_leases(), name="agentctl-leases"),
            asyncio.create_task(self.admission.watch(), name="agentctl-admission"),
        ]

    async def stop(self, grace: float = 0.0, cut_short: asyncio.Event | None = None) -> None:
        """Stop taking runs, give those in flight `grace` seconds to finish, then stop them
        and hand them back: another replica (or the next start) resumes each from its last
        checkpoint. Runs recording how they ended are let finish. Webhook deliveries in
        flight get what is left of `grace`. `cut_short` set ends the grace at once (the
        agent was deleted meanwhile)."""
        began = time.monotonic()
        try:
            await self._stop_runs(grace, cut_short)
        finally:
            await self.webhooks.stop(max(0.0, grace - (time.monotonic() - began)))

    async def _stop_runs(self, grace: float, cut_short: asyncio.Event | None) -> None:
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background = []
        tasks = list(self._tasks.values())
        if tasks and grace > 0:
            log.info("waiting up to %s s for %d runs to finish", grace, len(tasks))
            await wait_all(tasks, grace, unless=cut_short)
        tasks = [task for task in tasks if not task.done()]
        for task in tasks:
            if task not in self._finishing:
                task.cancel(SHUTDOWN)
        if tasks:
            # A run recording its end gets a moment (a full disk could hold it for ever).
            await asyncio.wait(tasks, timeout=FINISH_TIMEOUT)
            for task in tasks:
                task.cancel(SHUTDOWN)
            await asyncio.gather(*tasks, return_exceptions=True)
        if not tasks:
            return
        try:
            released = await self.storage.runs.release(self.worker)
        except Exception as exc:  # an outage: they are retried once their lease expires
            if not self._noted_outage(exc):
                raise
            log.info("%d unfinished runs are retried once their lease expires", len(tasks))
            return
        if released:
            log.info(self._handed_back(len(released)))
            await self._wake_others()

    def _handed_back(self, count: int) -> str:
        """What becomes of `count` runs this stop handed back, in a line."""
        runs = "1 unfinished run was" if count == 1 else f"{count} unfinished runs were"
        each = "it" if count == 1 else "each"
        if self.storage.kind == "sqlite":  # one process: nothing else takes them meanwhile
            return (f"{runs} stopped; {each} resumes from its last checkpoint the next time "
                    f"{self.restarted_by} starts")  # fmt: skip
        return (f"{runs} handed back; another replica (or this one, started again) resumes "
                f"{each} from its last checkpoint")  # fmt: skip

    # -- accepting runs ----------------------------------------------------------------

    async def admit(self, user_id: str | None) -> None:
        """Before a run of `user_id` (None: of no user) is created: raise `BudgetExceeded`
        when a budget of the user or of the agent is spent (`metering/budgets.py`)."""
        if self.deployment.ready:
            project = self.deployment.runtime.project
            await self.budgets.admit(project.budgets, project.name, user_id)

    async def budget_standing(self, user_id: str | None) -> list[Standing]:
        """Every budget that applies to `user_id` (None: the agent's), with its use now."""
        if not self.deployment.ready:
            return []
        project = self.deployment.runtime.project
        return await self.budgets.standing(project.budgets, project.name, user_id)

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
        if not run.temporary:  # a temporary run's thread is new: its log is empty
            await mark_start(self.storage, run)
        await self.storage.runs.create(run)
        if self.deployment.ready:  # a start, for the runs-per-minute budgets
            await self.budgets.started(self.deployment.runtime.project.budgets,
                                       run.kwargs.get("user_id"))  # fmt: skip
        self._wake.set()
        await self._wake_others()
        return run

    async def cancel(self, run: Run, action: CancelAction = "interrupt") -> None:
        """Stop `run`: a pending run never starts, a running one is cancelled wherever it
        executes. `rollback` also deletes the run and the checkpoints it wrote."""
        if self._cancel_here(run.run_id, action):
            return
        if run.status == "pending" and await self.storage.runs.cancel_pending(
            run.run_id, delete=action == "rollback"
        ):
            await self._append_end(run, "interrupted", cancelled=True)
            if action != "rollback":  # a rolled back run is gone: nothing to tell of
                self._notify(run, "interrupted")
            return
        # Running on another replica (or claimed since it was read): its replica stops it.
        await self.storage.bus.publish("cancel", {"run_id": run.run_id, "action": action})

    async def cancel_and_wait(
        self, runs: list[Run], action: CancelAction = "interrupt", timeout: float = STOP_TIMEOUT
    ) -> None:
        """Cancel `runs` and wait (at most `timeout` s) until each has stopped and recorded
        it, here or on another replica: once this returns, reading a run shows it ended."""
        for run in runs:
            await self.cancel(run, action)
        await asyncio.gather(*(self.stopped(run.run_id, timeout) for run in runs))

    def _cancel_here(self, run_id: str, action: CancelAction) -> bool:
        """Cancel the run if this process executes it; False if it does not."""
        task = self._tasks.get(run_id)
        if task is None:
            return False
        if task in self._finishing:  # it ended: too late to stop it (it may be waiting
            return True  # for the storage to record that, e.g. a full disk)
        if task not in self._cancel_actions:  # a second cancel would cut clean-up short
            self._cancel_actions[task] = action
            task.cancel("cancelled")
        return True

    @staticmethod
    def _current() -> asyncio.Task[None]:
        task = asyncio.current_task()
        assert task is not None
        return task

    def _lose(self, task: asyncio.Task[None]) -> None:
        """Stop an attempt that no longer holds its run: it writes nothing more, and the run
        is not ended (the attempt that holds it goes on)."""
        if task not in self._cancel_actions:
            self._cancel_actions[task] = "lease lost"
            task.cancel("lease lost")

    async def _on_cancel(self, message: Message) -> None:
        run_id, action = message["run_id"], message["action"]
        if not self._cancel_here(run_id, action):
            self._early_cancels[run_id] = (action, time.monotonic())

    async def _wake_others(self) -> None:
        """Wake the other replicas' dispatchers (this one's own wakes at once)."""
        await self.storage.bus.publish("wake", {"from": self.worker})

    async def _on_wake(self, message: Message) -> None:
        if message.get("from") != self.worker:
            self._wake.set()

    def wake(self) -> None:
        """Look for runs to execute now (a revision arrived)."""
        self._wake.set()

    def is_executing(self, run_id: str) -> bool:
        return run_id in self._tasks

    async def stopped(self, run_id: str, timeout: float = STOP_TIMEOUT) -> None:
        """Wait (at most `timeout` s) until `run_id` is not executing, here or elsewhere."""
        task = self._tasks.get(run_id)
        if task is not None:
            await asyncio.wait([task], timeout=timeout)
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = await self.storage.runs.get(run_id)
            if run is None or run.status != "running":
                return
            await asyncio.sleep(0.05)

    # -- executing runs ----------------------------------------------------------------

    async def _dispatch(self) -> None:
        while True:
            await self.admission.acquire()
            # Cleared before the claim: a wake-up that arrives while a claim awaits the
            # database (PostgreSQL) makes the next sleep return at once.
            self._wake.clear()
            if not self.deployment.ready:  # a new agent of a platform, its revision on the way:
                self.admission.release()  # runs are for the replicas that have it
                await self._sleep_until_woken()
                continue
            asked = time.monotonic()  # the lease is counted from no later than this
            try:
                run = await self.storage.runs.claim(now(), worker=self.worker, lease=self.lease)
            except Exception as exc:
                self.admission.release()
                self._log_failure(exc, "claiming a run failed; retrying in 1 s")
                await asyncio.sleep(1.0)
                continue
            if run is None:
                self.admission.release()
                await self._sleep_until_woken()
                continue
            # An earlier attempt still executing here stalled past its lease: it stops at
            # its next step, and every write it tries meanwhile is refused.
            previous = self._tasks.get(run.run_id)
            if previous is not None:
                self._lose(previous)
            task = asyncio.create_task(self._run(run, asked), name=f"run-{run.run_id}")
            self._tasks[run.run_id] = task
            early = self._early_cancels.pop(run.run_id, None)
            if early is not None:
                self._cancel_here(run.run_id, early[0])

    async def _keep_leases(self) -> None:
        """Renew the leases of the runs executing here, stop those another replica took,
        requeue the runs of dead replicas, and look for work a missed wake-up left behind."""
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                executing = list(self._attempts.values())
                asked = time.monotonic()
                held = await self.storage.runs.renew(self.worker, self.lease)
                for fence, task in executing:
                    if held.get(fence.run_id) == fence.attempt:
                        fence.granted(asked)
                    elif task not in self._finishing:
                        log.warning("run %s: lease lost to another replica; stopping", fence.run_id)
                        self._lose(task)
                await self._requeue_orphans()
                horizon = time.monotonic() - 2 * self.lease
                for run_id, (_, at) in list(self._early_cancels.items()):
                    if at < horizon:
                        del self._early_cancels[run_id]
            except Exception as exc:
                self._log_failure(exc, "keeping run leases failed; retrying")
            self._wake.set()

    @staticmethod
    def _noted_outage(exc: Exception) -> bool:
        """Whether `exc` is an outage, then noted (logged once, storage/outages.py). The
        caller raises anything else itself: raised from here, the exception would keep this
        frame (and what the failed call held) in a reference cycle."""
        service = service_down(exc)
        if service is not None:
            outages.down(service, exc)
        return service is not None

    @staticmethod
    def _log_failure(exc: Exception, message: str) -> None:
        """An outage is logged once (storage/outages.py); anything else with its traceback."""
        service = service_down(exc)
        if service is not None:
            outages.down(service, exc)
        else:
            log.exception(message)

    async def _requeue_orphans(self) -> None:
        requeued = await self.storage.runs.requeue_orphans(self.worker, now())
        for run in requeued:
            await self.storage.events.supersede(run.run_id, run.attempt)
            log.info("run %s lost its replica; retrying it (attempt %d)", run.run_id,
                     run.attempt + 1)  # fmt: skip
        if requeued:
            self._wake.set()
            await self._wake_others()

    async def _sleep_until_woken(self) -> None:
        timeout = None
        wakeup = await self.storage.runs.next_wakeup()
        if wakeup is not None:
            timeout = max(0.0, (wakeup - now()).total_seconds())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)

    async def _run(self, run: Run, asked: float) -> None:
        """Execute the attempt of `run` claimed at `asked` (monotonic)."""
        task = self._current()
        fence = Fence(
            run.run_id,
            run.attempt,
            self.worker,
            # While the database is down nothing can take the run over: the check waits.
            extend=lambda fence: ride_out(lambda: self.storage.runs.extend(fence)),
            stop=functools.partial(self._lose, task),
            lease=self.lease,
        )
        fence.granted(asked)
        self._attempts[run.run_id] = (fence, task)
        self._started_at[run.run_id] = now()
        fencing.current.set(fence)  # this task's own context: its checkpoint writes
        started, status = time.monotonic(), "requeued"  # unless it ends here
        run_started(run)
        with bind_run(run.run_id, run.thread_id, run.assistant_id, attempt=run.attempt):
            try:
                status = await self._execute_or_fail(run, fence)
            except StaleAttempt:
                log.warning("run %s: attempt %d lost the run while this replica was stalled; "
                            "it stopped without writing, another attempt goes on with it",
                            run.run_id, run.attempt)  # fmt: skip
            except asyncio.CancelledError:
                if self._cancel_actions.get(task) in (None, "lease lost"):
                    raise  # its replica stops, or another took it: it is retried, not ended
                status = "interrupted"
            finally:
                if self._tasks.get(run.run_id) is task:
                    del self._tasks[run.run_id]
                if self._attempts.get(run.run_id, (None,))[0] is fence:
                    del self._attempts[run.run_id]
                    self._started_at.pop(run.run_id, None)
                self._finishing.discard(task)
                self._cancel_actions.pop(task, None)
                self.admission.release()
                self._wake.set()
                run_finished(run, status, time.monotonic() - started)

    async def _execute_or_fail(self, run: Run, fence: Fence) -> RunStatus | Literal["requeued"]:
        """`_execute`; a failure of the server's own ends the run with an error, an outage
        hands it back for later."""
        try:
            return await self._execute(run, fence)
        except StaleAttempt:
            raise
        except Exception as exc:
            if service_down(exc):
                await self._retry_later(run, exc)
                return "requeued"
            log.exception("run %s could not be executed", run.run_id)
            failure = {"error": "InternalError", "message": "the server failed to run it"}
            await self._finish(run, None, executor.Outcome("error", failure), fence)
            return "error"

    async def _retry_later(self, run: Run, exc: Exception) -> None:
        """The run stopped because PostgreSQL or Redis went away: once the database is back,
        it is pending again and resumes from its last checkpoint (attempt + 1)."""
        log.warning("run %s stopped by an outage (%s); it resumes from its last checkpoint "
                    "once the service is back", run.run_id, service_down(exc))  # fmt: skip
        await ride_out(lambda: self.storage.runs.release(self.worker, run_id=run.run_id))
        await self._wake_others()

    async def _execute(self, run: Run, fence: Fence) -> RunStatus:
        """Execute the run to its end and record how it ended; returns its status."""
        runtime = self.deployment.runtime  # the run keeps this revision to the end
        graph = runtime.graph
        # What this attempt spends and does, counted by the runtime's middleware (this
        # task's own context: its subagents and tools see it), stored when it ends.
        user_id = run.kwargs.get("user_id")
        ledger = None
        if self.metering:
            ledger = Ledger(run.run_id, run.thread_id, runtime.name, user_id=user_id)
            # Before each model call: stop once a budget of the user or the agent is spent.
            project = runtime.project
            ledger.guard = self.budgets.guard_for(project.budgets, project.name, user_id)
        ledgers.current.set(ledger)
        # A cancel may land anywhere from here on, before the graph runs as well: the run
        # records that it stopped wherever it was.
        try:
            config, resume = await self._prepare(run, fence)

            async def publish(event: str, data: Any) -> None:
                await fence.check()
                data = within(run.run_id, event, serde.dumps(data), self.max_event_bytes)
                await self.storage.events.append(
                    run.thread_id, run.run_id, event, data, fence=fence
                )

            with run_span(run, runtime.name) as trace:
                try:
                    async with asyncio.timeout(self.run_timeout):
                        outcome = await executor.execute(
                            run,
                            graph,
                            config,
                            publish,
                            resume=resume,
                            models=runtime.project.models,
                        )
                except TimeoutError:
                    message = f"the run exceeded {self.run_timeout} s"
                    failure = {"error": "TimeoutError", "message": message}
                    outcome = executor.Outcome("timeout", failure)
                    await publish("error", outcome.error)
                trace.outcome(outcome.status, outcome.error)
        except asyncio.CancelledError:
            action = self._cancel_actions.get(self._current())
            if action == "interrupt" or action == "rollback":
                await self._finish_cancelled(run, graph, action, fence)
            raise
        await self._finish(run, graph, outcome, fence)
        return outcome.status

    async def _prepare(self, run: Run, fence: Fence) -> tuple[dict[str, Any], bool]:
        """The run's config and whether it resumes from a checkpoint; its thread marked busy."""
        assistant = await self.storage.assistants.get(run.assistant_id)
        config = executor.run_config(run, assistant, self.deployment)
        resume = await executor.resumes_from_checkpoint(self.storage, run)
        graph_id = assistant.graph_id if assistant is not None else self.deployment.graph_id
        labels = thread_labels(graph_id, run.assistant_id)
        await ride_out(
            lambda: self.storage.threads.update(
                run.thread_id, ThreadUpdate(metadata=labels, status="busy"), fence=fence
            )
        )
        return config, resume

    async def _finish(self, run: Run, graph: Any, outcome: executor.Outcome, fence: Fence) -> None:
        """Record how the run ended, then tell its clients. The status write is fenced: an
        attempt that lost the run ends nothing."""
        self._finishing.add(self._current())
        ledger = self._spent()
        await ride_out(
            lambda: self.storage.runs.finish(
                run.run_id, outcome.status, error=outcome.error, fence=fence, usage=ledger
            )
        )
        self.budgets.forget(run.kwargs.get("user_id"))  # what it spent is read again
        await ride_out(lambda: self._settle_thread(run, graph, outcome.status, fence))
        await self._append_end(run, outcome.status, fence=fence)
        values = await self._final_values(run, graph)
        await self._delete_if_temporary(run)
        self._notify(run, outcome.status, outcome.error, values)

    async def _finish_cancelled(
        self, run: Run, graph: Any, action: CancelAction, fence: Fence
    ) -> None:
        self._finishing.add(self._current())
        storage = self.storage
        ledger = self._spent()
        after: Fence | None = fence
        if action == "rollback":
            if ledger is not None and ledger.by_model:  # what it spent stays spent
                await ride_out(
                    lambda: storage.runs.set_status(
                        run.run_id, "interrupted", "cancelled", fence=fence, usage=ledger
                    )
                )
            await ride_out(lambda: storage.runs.delete(run.run_id, fence=fence))
            # The run is gone: no other attempt of it can write any more.
            after = None
            fencing.current.set(None)
            await ride_out(lambda: storage.checkpointer.adelete_for_run(run.thread_id, run.run_id))
        else:
            await ride_out(
                lambda: storage.runs.set_status(
                    run.run_id, "interrupted", "cancelled", fence=fence, usage=ledger
                )
            )
            self.budgets.forget(run.kwargs.get("user_id"))  # what it spent is read again
        settled: RunStatus = "interrupted" if action == "interrupt" else "success"
        await ride_out(lambda: self._settle_thread(run, graph, settled, after))
        await self._append_end(run, "interrupted", cancelled=True, fence=after)
        values = await self._final_values(run, graph) if action == "interrupt" else None
        await self._delete_if_temporary(run)
        if action == "interrupt":  # a rolled back run is gone: nothing to tell of
            self._notify(run, "interrupted", values=values)

    @staticmethod
    def _spent() -> Ledger | None:
        """The ledger of the attempt ending in this task (None when it failed before it
        began), its tokens counted into the metrics."""
        ledger = ledgers.current.get()
        if ledger is not None:
            tokens_used(ledger.agent, ledger)
        return ledger

    async def _final_values(self, run: Run, graph: Any) -> Any:
        """The thread's values after `run`, for its webhook (None when it has none)."""
        if not run.kwargs.get("webhook") or graph is None:
            return None
        try:
            state = await graph.aget_state({"configurable": {"thread_id": run.thread_id}})
            return serde.to_jsonable(state.values)
        except Exception as exc:  # the webhook goes without them; the run is not failed
            log.warning("run %s: the values for its webhook could not be read: %s",
                        run.run_id, type(exc).__name__)  # fmt: skip
            return None

    def _notify(
        self,
        run: Run,
        status: RunStatus,
        error: dict[str, Any] | None = None,
        values: Any = None,
    ) -> None:
        """Deliver the run's webhook, if it named one, in the background: its end is
        stored by now, and nothing the receiver does can change or delay it."""
        url = run.kwargs.get("webhook")
        if not url:
            return
        started_at = self._started_at.get(run.run_id)
        payload = payload_of(
            run_view(run), status=status, values=values, error=error, started_at=started_at
        )
        self.webhooks.deliver(url, run.run_id, payload)

    async def _delete_if_temporary(self, run: Run) -> None:
        """A stateless run's thread goes once the run ended (its row with it: what follows
        is no longer a write of the run's attempt)."""
        if run.temporary:
            fencing.current.set(None)
            await ride_out(lambda: self.storage.threads.delete(run.thread_id))

    async def _settle_thread(
        self, run: Run, graph: Any, status: RunStatus, fence: Fence | None
    ) -> None:
        """The thread's status and pending interrupts after `run`."""
        interrupts: dict[str, list[dict[str, Any]]] = {}
        # A failed run (e.g. a strict resume of an interrupt that is not waiting) leaves
        # the interrupts that were pending still pending.
        if status in ("interrupted", "error") and not run.temporary and graph is not None:
            try:
                state = await graph.aget_state({"configurable": {"thread_id": run.thread_id}})
            except Exception as exc:  # e.g. the run failed because the database did
                if status != "error" or service_down(exc):
                    raise
                log.warning("run %s: the thread's interrupts could not be read", run.run_id)
                state = None
            for task in state.tasks if state is not None else ():
                if task.interrupts:
                    interrupts[task.id] = serde.to_jsonable(list(task.interrupts))
        thread_status = {"error": "error", "interrupted": "interrupted"}.get(status, "idle")
        if status == "interrupted" and not interrupts:
            thread_status = "idle"
        change = ThreadUpdate(status=thread_status, interrupts=interrupts)  # type: ignore[arg-type]
        await self.storage.threads.update(run.thread_id, change, fence=fence)

    async def _append_end(
        self, run: Run, status: RunStatus, *, cancelled: bool = False, fence: Fence | None = None
    ) -> None:
        # Clients hear of the end only once how the run ended is stored for good (an
        # outage of the storage, e.g. a full disk, holds it back until it is).
        await ride_out(self.storage.sync)
        end: dict[str, Any] = {"run_id": run.run_id, "status": status}
        if cancelled:
            end["cancelled"] = True
        data = serde.dumps(end)
        await self.storage.events.append(run.thread_id, run.run_id, END_EVENT, data, fence=fence)
