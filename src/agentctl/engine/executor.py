"""Executing one claimed run: its config, its input (or where to resume), its events."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langgraph._internal import _constants
from langgraph.types import Command

from agentctl.engine.deployment import Deployment
from agentctl.engine.wire import (
    ANSWERS_INTERRUPT,
    MessageAccumulator,
    event_name,
    langgraph_modes,
    normalize_modes,
)
from agentctl.errors import BudgetExceeded
from agentctl.runtime.memory import OPERATOR_KEY, USER_ID_KEY
from agentctl.runtime.model_errors import model_failure
from agentctl.storage.base import BY_OPERATOR, Assistant, Run, RunStatus, Storage
from agentctl.storage.fence import StaleAttempt
from agentctl.storage.outages import service_down

log = logging.getLogger("agentctl.engine")

# langgraph's switch for strict resumes (None on a langgraph that has none): a resume that
# answers an interrupt that is not waiting fails the run with `UnknownInterruptError`.
STRICT_RESUME_KEY: str | None = getattr(_constants, "CONFIG_KEY_STRICT_RESUME", None)

Publish = Callable[[str, Any], Awaitable[None]]
E = TypeVar("E", bound=BaseException)


@dataclass
class Outcome:
    status: RunStatus
    error: dict[str, Any] | None = None
    interrupts: list[Any] = field(default_factory=list)


def run_config(run: Run, assistant: Assistant | None, deployment: Deployment) -> dict[str, Any]:
    """The langgraph config of `run`: the assistant's config, overlaid by the run's, with the
    ids the server owns. A client cannot choose the user identity (it comes from auth)."""
    base = dict(assistant.config) if assistant else {}
    requested = run.kwargs.get("config") or {}
    config: dict[str, Any] = {**base, **requested}
    configurable = {
        **(base.get("configurable") or {}),
        **(requested.get("configurable") or {}),
    }
    configurable.pop(USER_ID_KEY, None)
    configurable.pop(OPERATOR_KEY, None)
    checkpoint = run.kwargs.get("checkpoint") or {}
    configurable.update({k: v for k, v in checkpoint.items() if k != "thread_id" and v})
    if run.kwargs.get("checkpoint_id"):
        configurable["checkpoint_id"] = run.kwargs["checkpoint_id"]
    ids = {
        "thread_id": run.thread_id,
        "run_id": run.run_id,
        "assistant_id": run.assistant_id,
        "graph_id": deployment.graph_id,
    }
    configurable.update(ids, run_attempt=run.attempt)
    if STRICT_RESUME_KEY is not None:  # the run's `strict_resume`, never the client's config
        configurable.pop(STRICT_RESUME_KEY, None)
        if run.kwargs.get("strict_resume"):
            configurable[STRICT_RESUME_KEY] = True
    user_id = run.kwargs.get("user_id")
    if user_id:
        configurable[USER_ID_KEY] = user_id
    if run.kwargs.get(BY_OPERATOR) is True:
        configurable[OPERATOR_KEY] = True
    config["configurable"] = configurable
    config["metadata"] = {
        **(base.get("metadata") or {}),
        **(requested.get("metadata") or {}),
        **run.metadata,
        **ids,
    }
    return config


async def resumes_from_checkpoint(storage: Storage, run: Run) -> bool:
    """Whether a retried run already wrote checkpoints, so it continues from the last one."""
    if run.attempt <= 1 or run.temporary:
        return False
    latest = await storage.checkpointer.aget_tuple({"configurable": {"thread_id": run.thread_id}})
    return latest is not None and latest.metadata.get("run_id") == run.run_id


def graph_input(run: Run) -> Any:
    command = run.kwargs.get("command")
    if command:
        return Command(
            resume=command.get("resume"),
            update=command.get("update"),
            goto=command.get("goto") or (),
        )
    return run.kwargs.get("input")


async def execute(
    run: Run,
    graph: Any,
    config: dict[str, Any],
    publish: Publish,
    *,
    resume: bool,
    models: Collection[str] = (),
) -> Outcome:
    """Stream `run` through `graph`, publishing every event; return how it ended.
    `models`: those the graph calls ("openai:gpt-4o"), whose providers' failures are told
    in one line (the traceback at debug level).

    Cancellation (`asyncio.CancelledError`) propagates to the caller."""
    kwargs = run.kwargs
    modes = normalize_modes(kwargs.get("stream_mode"))
    subgraphs = bool(kwargs.get("stream_subgraphs"))
    await publish("metadata", {"run_id": run.run_id, "attempt": run.attempt})
    # The graph's first steps hold the loop for milliseconds: before they begin, let the
    # streams send the metadata event (one turn of the loop to write it, one for the write
    # to go out), so the client learns at once that the run has started.
    for _ in range(2):
        await asyncio.sleep(0)
    options: dict[str, Any] = {
        "stream_mode": langgraph_modes(modes),
        # Subgraph streams cost a run more than half a millisecond: only when asked for.
        # Interrupts raised in a subgraph reach the root's `updates` either way.
        "subgraphs": subgraphs,
        "interrupt_before": kwargs.get("interrupt_before"),
        "interrupt_after": kwargs.get("interrupt_after"),
    }
    if kwargs.get("durability") and not run.temporary:
        options["durability"] = kwargs["durability"]
    if kwargs.get("context"):
        options["context"] = kwargs["context"]
    outcome = Outcome("success")
    legacy = MessageAccumulator() if "messages" in modes else None
    try:
        source = graph_input(run) if not resume else None
        if kwargs.get(ANSWERS_INTERRUPT) and source is not None and not resume:
            state = await graph.aget_state(config)
            if any(task.interrupts for task in state.tasks):
                source = Command(resume=source)
        if "events" in modes:
            stream = _with_events(graph, source, config, options, publish)
        else:
            stream = graph.astream(source, config, **options)
        async for item in stream:
            namespace, mode, chunk = item if subgraphs else ((), *item)
            if mode == "updates" and not namespace and "__interrupt__" in chunk:
                outcome.status = "interrupted"
                outcome.interrupts.extend(chunk["__interrupt__"])
            for name, data in _client_events(modes, namespace, mode, chunk, legacy):
                await publish(name, data)
    except (asyncio.CancelledError, StaleAttempt):
        raise
    except Exception as exc:  # the agent failed: the client gets an `error` event
        if _stale(exc):  # wrapped by a library: this attempt writes nothing more
            raise StaleAttempt(run.run_id, run.attempt) from exc
        if service_down(exc):
            raise  # not the agent's failure: the run is retried once the service is back
        budget = _in_chain(exc, BudgetExceeded)
        failure = None if budget is not None else model_failure(exc, models)
        if budget is not None:  # a budget spent (its guard), not a failure: no traceback
            log.info("run %s stopped: %s", run.run_id, budget)
            outcome = Outcome("error", {"error": type(budget).__name__, "message": str(budget)})
        elif failure is None:
            log.warning("run %s failed: %s: %s", run.run_id, type(exc).__name__, exc,
                        exc_info=True)  # fmt: skip
            outcome = Outcome("error", {"error": type(exc).__name__, "message": str(exc)})
        else:
            log.warning("run %s failed: %s", run.run_id, failure)
            log.debug("run %s: the model call's traceback", run.run_id, exc_info=exc)
            outcome = Outcome("error", {"error": type(failure).__name__, "message": str(failure)})
        await publish("error", outcome.error)
    return outcome


def _stale(exc: BaseException) -> bool:
    """Whether `exc` is, or was caused by, a refused write of a stale attempt."""
    return _in_chain(exc, StaleAttempt) is not None


def _in_chain(exc: BaseException, kind: type[E]) -> E | None:
    """`exc` or the first of its causes that is a `kind`, else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _client_events(
    modes: list[str],
    namespace: tuple[str, ...],
    mode: str,
    chunk: Any,
    legacy: MessageAccumulator | None,
) -> list[tuple[str, Any]]:
    if mode == "messages":
        message, metadata = chunk
        events: list[tuple[str, Any]] = []
        if "messages-tuple" in modes:
            events.append((event_name("messages", namespace), [message, metadata]))
        if legacy is not None:
            events.extend(
                (event_name(name, namespace), data) for name, data in legacy.add(message, metadata)
            )
        return events
    if mode in modes:
        return [(event_name(mode, namespace), chunk)]
    return []


async def _with_events(
    graph: Any, source: Any, config: dict[str, Any], options: dict[str, Any], publish: Publish
) -> Any:
    """`astream_events` v2: each event is published as `events`; the root graph's stream
    chunks are yielded on for the other modes."""
    root: str | None = None
    async for event in graph.astream_events(source, config, version="v2", **options):
        if root is None:
            root = event.get("run_id")
        if event.get("event") == "on_chain_stream" and event.get("run_id") == root:
            yield event["data"]["chunk"]
            continue
        await publish("events", event)
