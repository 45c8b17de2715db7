"""OpenTelemetry traces: a span per HTTP request and per run, exported over OTLP/HTTP.

Off unless `configure_tracing` gets an endpoint; then the `otel` extra is needed. Nothing
of OpenTelemetry is imported until then, and with tracing off the middleware and
`run_span` only check a module variable. The tracer provider is ours, not the process-wide
global one, so tests (and embedders) can configure and shut it down freely.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentctl._version import __version__
from agentctl.errors import UserError
from agentctl.observability.logs import redact
from agentctl.observability.routes import UNMATCHED, route_template

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

    from agentctl.storage.base import Run

FAILED_RUN_STATUSES = frozenset({"error", "timeout"})


class _Tracing:
    provider: TracerProvider | None = None
    tracer: Tracer | None = None


_state = _Tracing()


def configure_tracing(endpoint: str | None, service_name: str) -> None:
    """Export spans to the OTLP/HTTP collector at `endpoint` (`{endpoint}/v1/traces`) as
    `service_name`; with no endpoint, trace nothing. Call `shutdown_tracing` on exit."""
    shutdown_tracing()
    if not endpoint:
        return
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise UserError(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry packages are not "
            "installed — pip install 'agentctl[otel]', or unset OTEL_EXPORTER_OTLP_ENDPOINT"
        ) from None
    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name}), shutdown_on_exit=False
    )
    exporter = OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces")
    provider.add_span_processor(BatchSpanProcessor(exporter))
    _state.provider = provider
    _state.tracer = provider.get_tracer("agentctl", __version__)


def tracing_enabled() -> bool:
    return _state.tracer is not None


def flush_tracing(timeout_seconds: float = 10.0) -> bool:
    """Export the spans ended so far (blocks: call it off the event loop); False on timeout."""
    provider = _state.provider
    return provider is None or provider.force_flush(int(timeout_seconds * 1000))


def shutdown_tracing() -> None:
    """Export what is left and stop tracing (blocks up to the exporter's timeout)."""
    provider, _state.provider, _state.tracer = _state.provider, None, None
    if provider is not None:
        provider.shutdown()


def _record_exception(span: Span, exc: BaseException) -> None:
    """The exception on the span, its message and traceback with credentials masked."""
    from opentelemetry.trace import StatusCode

    stack = "".join(traceback.format_exception(exc))
    span.record_exception(
        exc, {"exception.message": redact(str(exc)), "exception.stacktrace": redact(stack)}
    )
    span.set_attribute("error.type", type(exc).__qualname__)
    span.set_status(StatusCode.ERROR, type(exc).__qualname__)


# -- runs ------------------------------------------------------------------------------------


class RunTrace:
    """The span of one run's execution; `outcome` says how it ended."""

    def __init__(self, span: Span | None) -> None:
        self.span = span

    def outcome(self, status: str, error: Mapping[str, Any] | None = None) -> None:
        """The run ended with `status` (`error` and `timeout` mark the span failed)."""
        if self.span is None:
            return
        from opentelemetry.trace import StatusCode

        self.span.set_attribute("agentctl.run.status", status)
        if status in FAILED_RUN_STATUSES:
            kind = str((error or {}).get("error") or status)
            self.span.set_attribute("error.type", kind)
            self.span.set_status(StatusCode.ERROR, kind)


_UNTRACED: AbstractContextManager[RunTrace] = nullcontext(RunTrace(None))


def run_span(run: Run) -> AbstractContextManager[RunTrace]:
    """The span of `run`'s execution on this replica (a no-op with tracing off)::

    with run_span(run) as trace:
        outcome = await execute(run)
        trace.outcome(outcome.status, outcome.error)

    An exception escaping it marks the span failed; a cancellation does not.
    """
    tracer = _state.tracer
    if tracer is None:
        return _UNTRACED
    return _run_span(tracer, run)


@contextmanager
def _run_span(tracer: Tracer, run: Run) -> Iterator[RunTrace]:
    from opentelemetry.trace import SpanKind, use_span

    attributes: dict[str, str | int] = {
        "agentctl.run_id": run.run_id,
        "agentctl.thread_id": run.thread_id,
        "agentctl.assistant_id": run.assistant_id,
        "agentctl.attempt": run.attempt,
    }
    span = tracer.start_span("run", kind=SpanKind.CONSUMER, attributes=attributes)
    with use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        try:
            yield RunTrace(span)
        except Exception as exc:
            _record_exception(span, exc)
            raise


# -- HTTP ------------------------------------------------------------------------------------


class HttpTracing:
    """ASGI middleware: a server span per request, named `METHOD /route/template`, child of
    the caller's span when the request carries a W3C `traceparent`. The span lasts until the
    response (streamed body included) is over."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tracer = _state.tracer
        if tracer is None or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await _traced(tracer, self.app, scope, receive, send)


async def _traced(tracer: Tracer, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    from opentelemetry import context, trace
    from opentelemetry.trace import SpanKind, StatusCode
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier = {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in scope["headers"]
        if name in (b"traceparent", b"tracestate")
    }
    parent = TraceContextTextMapPropagator().extract(carrier)
    method: str = scope["method"]
    attributes: dict[str, str | int] = {
        "http.request.method": method,
        "url.path": scope["path"],
        "url.scheme": scope.get("scheme", "http"),
        "network.protocol.version": scope.get("http_version", "1.1"),
    }
    if scope.get("client"):
        attributes["client.address"] = scope["client"][0]
    host, port = scope.get("server") or (None, None)
    if host is not None and port is not None:  # not on a unix socket
        attributes["server.address"], attributes["server.port"] = host, port
    span = tracer.start_span(method, parent, kind=SpanKind.SERVER, attributes=attributes)
    token = context.attach(trace.set_span_in_context(span, parent))
    status = 0

    async def traced_send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            span.set_attribute("http.response.status_code", status)
        await send(message)

    try:
        await app(scope, receive, traced_send)
    except Exception as exc:
        _record_exception(span, exc)
        raise
    finally:
        route = route_template(scope)
        if route != UNMATCHED:
            span.set_attribute("http.route", route)
            span.update_name(f"{method} {route}")
        if status >= 500:
            span.set_status(StatusCode.ERROR)
        context.detach(token)
        span.end()
