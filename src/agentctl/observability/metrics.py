"""Prometheus metrics of the run lifecycle, the streams and the HTTP API.

Each application has its own `Metrics` (its own registry, served by `/metrics` with the
stored-data gauges), so several servers in one process never mix their figures. The app
binds its `Metrics` to the context of every request and of its lifespan, so the engine's
tasks (started in the lifespan) and the stream followers (in requests) record into their
own app's registry through the plain hooks below; outside any app they do nothing.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentctl.observability.routes import route_template

if TYPE_CHECKING:
    from agentctl.metering.ledger import Ledger
    from agentctl.storage.base import Run

RUN_STATUSES = ("success", "error", "interrupted", "timeout")
WEBHOOK_OUTCOMES = ("delivered", "failed", "refused", "dropped")
RUN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# Any other method a client makes up is counted as `other`: labels stay few.
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

_bound: contextvars.ContextVar[Metrics | None] = contextvars.ContextVar(
    "agentctl_metrics", default=None
)


class Metrics:
    """The metrics of one application, in its own registry (never the global one)."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        self.runs_finished = Counter(
            "agentctl_runs_finished",
            "Runs this replica finished executing, by status",
            ["status"],
            registry=registry,
        )
        self.run_duration = Histogram(
            "agentctl_run_duration_seconds",
            "How long runs executed on this replica, by status",
            ["status"],
            buckets=RUN_BUCKETS,
            registry=registry,
        )
        self.runs_executing = Gauge(
            "agentctl_runs_executing", "Runs executing on this replica", registry=registry
        )
        self.run_queue_depth = Gauge(
            "agentctl_run_queue_depth",
            "Runs pending in storage (for every replica), at scrape time",
            registry=registry,
        )
        self.stream_subscribers = Gauge(
            "agentctl_stream_subscribers",
            "Event-stream followers open on this replica",
            registry=registry,
        )
        self.http_requests = Counter(
            "agentctl_http_requests",
            "HTTP requests answered, by method, route template and status",
            ["method", "route", "status"],
            registry=registry,
        )
        self.http_duration = Histogram(
            "agentctl_http_request_duration_seconds",
            "Time from a request's arrival to its response headers (a streamed body is not "
            "included), by method and route template",
            ["method", "route"],
            buckets=HTTP_BUCKETS,
            registry=registry,
        )
        self.webhook_deliveries = Counter(
            "agentctl_webhook_deliveries",
            "Webhook deliveries this replica ended, by outcome: delivered, failed (no 2xx "
            "after its retries), refused (an address webhooks may not reach), dropped (the "
            "replica stopped first)",
            ["outcome"],
            registry=registry,
        )
        self.model_tokens = Counter(
            "agentctl_model_tokens",
            "Tokens of the model calls of the runs this replica executed, by agent, model "
            "(provider:model as agent.toml names it) and kind: input (cached included), "
            "output, cached (input read from the provider's prompt cache)",
            ["agent", "model", "kind"],
            registry=registry,
        )
        for outcome in WEBHOOK_OUTCOMES:  # each shows (at 0) before its first delivery
            self.webhook_deliveries.labels(outcome=outcome)
        # Children of the known statuses made once: the hooks then take no label lookup, and
        # every status shows (at 0) before its first run.
        self._finished = {s: self.runs_finished.labels(status=s) for s in RUN_STATUSES}
        self._durations = {s: self.run_duration.labels(status=s) for s in RUN_STATUSES}

    @contextmanager
    def bind(self) -> Iterator[None]:
        """Make this the `Metrics` the hooks record into, here and in tasks started here."""
        token = _bound.set(self)
        try:
            yield
        finally:
            _bound.reset(token)

    def finished(self, status: str, seconds: float) -> None:
        self.runs_executing.dec()
        counter = self._finished.get(status) or self.runs_finished.labels(status=status)
        counter.inc()
        histogram = self._durations.get(status) or self.run_duration.labels(status=status)
        histogram.observe(seconds)


def current() -> Metrics | None:
    """The `Metrics` bound to this context, if any."""
    return _bound.get()


# -- hooks: cheap (a context-variable read and an increment), no I/O ----------------------


def run_started(run: Run) -> None:
    """A run starts executing on this replica."""
    metrics = _bound.get()
    if metrics is not None:
        metrics.runs_executing.inc()


def run_finished(run: Run, status: str, seconds: float) -> None:
    """A run started with `run_started` stopped executing here after `seconds`, with
    `status`: its final status, or `requeued` when a shutdown handed it back."""
    metrics = _bound.get()
    if metrics is not None:
        metrics.finished(status, seconds)


def tokens_used(agent: str, ledger: Ledger) -> None:
    """An attempt of a run of `agent` ended, its model calls' tokens counted in `ledger`."""
    metrics = _bound.get()
    if metrics is None:
        return
    for model, tokens in ledger.by_model.items():
        for kind, count in (("input", tokens.input), ("output", tokens.output),
                            ("cached", tokens.cached)):  # fmt: skip
            metrics.model_tokens.labels(agent=agent, model=model, kind=kind).inc(count)


def webhook_delivered(outcome: str) -> None:
    """A webhook delivery ended with `outcome` (one of `WEBHOOK_OUTCOMES`)."""
    metrics = _bound.get()
    if metrics is not None:
        metrics.webhook_deliveries.labels(outcome=outcome).inc()


def stream_opened() -> Metrics | None:
    """A stream follower starts; give what this returns to `stream_closed` when it ends
    (its app's metrics, even if the follower is closed from another context)."""
    metrics = _bound.get()
    if metrics is not None:
        metrics.stream_subscribers.inc()
    return metrics


def stream_closed(opened: Metrics | None) -> None:
    if opened is not None:
        opened.stream_subscribers.dec()


def join_by_agent(texts: Mapping[str, str]) -> bytes:
    """The exposition texts of several agents' registries as one, each sample labelled
    `agent="<name>"` (a metric family appears once, with every agent's samples)."""
    families: dict[str, Metric] = {}
    for agent, text in texts.items():
        for family in text_string_to_metric_families(text):
            joined = families.get(family.name)
            if joined is None:
                joined = Metric(family.name, family.documentation, family.type, family.unit)
                families[family.name] = joined
            joined.samples.extend(
                sample._replace(labels={**sample.labels, "agent": agent})
                for sample in family.samples
            )
    registry = CollectorRegistry(auto_describe=True)
    registry.register(_Collected(list(families.values())))
    return generate_latest(registry)


class _Collected:
    """A collector of families gathered already."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


# -- HTTP ----------------------------------------------------------------------------------


class HttpMetrics:
    """ASGI middleware: counts requests by method, route template and status, and times each
    from its arrival to its response headers. A streamed body (SSE, `wait`, `join`) is not
    in that time: a stream's length is the run's, measured by the run metrics. Also binds
    the app's `Metrics` for every request and for the lifespan (see the module's doc)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = _bound.set(self.metrics)
        try:
            if scope["type"] != "http":
                await self.app(scope, receive, send)
                return
            await self._observe(scope, receive, send)
        finally:
            _bound.reset(token)

    async def _observe(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        answered = False

        async def observed_send(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start" and not answered:
                answered = True
                self._record(scope, message["status"], time.perf_counter() - started)
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        except Exception:
            if not answered:  # the server's error handler answers 500
                self._record(scope, 500, time.perf_counter() - started)
            raise

    def _record(self, scope: Scope, status: int, seconds: float) -> None:
        method = scope["method"] if scope["method"] in HTTP_METHODS else "other"
        route = route_template(scope)
        self.metrics.http_requests.labels(method=method, route=route, status=str(status)).inc()
        self.metrics.http_duration.labels(method=method, route=route).observe(seconds)
