"""OpenTelemetry traces: a span per HTTP request and per run, exported over OTLP/HTTP.

Off unless `configure_tracing` gets an endpoint; then the `otel` extra is needed. Nothing
of OpenTelemetry is imported until then, and with tracing off the middleware and
`run_span` only check a module variable. The tracer provider is ours, not the process-wide
global one, so tests (and embedders) can configure and shut it down freely.

A run executes later than the request that created it, in a worker task (on any replica):
the request's trace context (`trace_context()`) is stored with the run (`TRACE_CONTEXT` in
its kwargs) and its `run` span continues that trace. Inside a run, the runtime adds the
spans of model and tool calls (`runtime/genai_spans.py`), and calls to MCP servers and to
other agents carry the context onward in a `traceparent` header (`mcp_client_span`).
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentctl._version import __version__
from agentctl.errors import UserError
from agentctl.observability.logs import redact
from agentctl.observability.routes import UNMATCHED, route_template

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer

    from agentctl.storage.base import Run

FAILED_RUN_STATUSES = frozenset({"error", "timeout"})
# The key of a run's kwargs holding the trace context of the request that created it.
TRACE_CONTEXT = "trace_context"


class _Tracing:
    provider: TracerProvider | None = None
    tracer: Tracer | None = None
    # Whether spans carry messages and tool arguments and results (opt-in).
    capture_content: bool = False


_state = _Tracing()


def configure_tracing(
    endpoint: str | None,
    service_name: str,
    *,
    capture_content: bool = False,
    exporter: SpanExporter | None = None,
) -> None:
    """Export spans to the OTLP/HTTP collector at `endpoint` (`{endpoint}/v1/traces`) as
    `service_name`; with no endpoint, trace nothing. Call `shutdown_tracing` on exit.

    `capture_content` (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`): spans of model
    and tool calls carry what was sent and answered. `exporter`: export to it instead (and
    at once, span by span: the OpenTelemetry SDK's in-memory exporter, in tests)."""
    shutdown_tracing()
    if not endpoint and exporter is None:
        return
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        raise UserError(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry packages are not "
            "installed — pip install 'agentctl[otel]', or unset OTEL_EXPORTER_OTLP_ENDPOINT"
        ) from None
    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name}), shutdown_on_exit=False
    )
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        otlp = OTLPSpanExporter(endpoint=f"{str(endpoint).rstrip('/')}/v1/traces")
        provider.add_span_processor(BatchSpanProcessor(otlp))
    _state.provider = provider
    _state.capture_content = capture_content
    _state.tracer = provider.get_tracer("agentctl", __version__)


def tracing_enabled() -> bool:
    return _state.tracer is not None


def tracer() -> Tracer | None:
    """The tracer while tracing is on; None (the one check a traced path makes) when off."""
    return _state.tracer


def capture_content() -> bool:
    """Whether spans may carry messages, tool arguments and results (opt-in)."""
    return _state.capture_content


def flush_tracing(timeout_seconds: float = 10.0) -> bool:
    """Export the spans ended so far (blocks: call it off the event loop); False on timeout."""
    provider = _state.provider
    return provider is None or provider.force_flush(int(timeout_seconds * 1000))


def shutdown_tracing() -> None:
    """Export what is left and stop tracing (blocks up to the exporter's timeout)."""
    provider, _state.provider, _state.tracer = _state.provider, None, None
    if provider is not None:
        provider.shutdown()


def record_exception(span: Span, exc: BaseException, *, message: bool = True) -> None:
    """The exception on the span, its message and traceback with credentials masked; its
    type alone without `message` (an agent's tool error may echo what the tool was given)."""
    from opentelemetry.trace import StatusCode

    if message:
        stack = "".join(traceback.format_exception(exc))
        span.record_exception(
            exc, {"exception.message": redact(str(exc)), "exception.stacktrace": redact(stack)}
        )
    else:
        span.add_event("exception", {"exception.type": type(exc).__qualname__})
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


def run_span(run: Run, agent: str | None = None) -> AbstractContextManager[RunTrace]:
    """The span of `run`'s execution on this replica (a no-op with tracing off), in the
    trace of the request that created it (`TRACE_CONTEXT`), else a trace of its own::

    with run_span(run, "my-agent") as trace:
        outcome = await execute(run)
        trace.outcome(outcome.status, outcome.error)

    The spans the run makes while it is open are its children. An exception escaping it
    marks the span failed; a cancellation does not.
    """
    tracer = _state.tracer
    if tracer is None:
        return _UNTRACED
    return _run_span(tracer, run, agent)


@contextmanager
def _run_span(tracer: Tracer, run: Run, agent: str | None) -> Iterator[RunTrace]:
    from opentelemetry.trace import SpanKind, use_span

    attributes: dict[str, str | int] = {
        "agentctl.run_id": run.run_id,
        "agentctl.thread_id": run.thread_id,
        "agentctl.assistant_id": run.assistant_id,
        "agentctl.attempt": run.attempt,
        "gen_ai.conversation.id": run.thread_id,
    }
    if agent:
        attributes["gen_ai.agent.name"] = agent
    stored = run.kwargs.get(TRACE_CONTEXT)
    parent = _extract(stored if isinstance(stored, Mapping) else {})
    span = tracer.start_span("run", parent, kind=SpanKind.CONSUMER, attributes=attributes)
    with use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        try:
            yield RunTrace(span)
        except Exception as exc:
            record_exception(span, exc)
            raise


# -- trace context ---------------------------------------------------------------------------


def trace_context() -> dict[str, str]:
    """The W3C trace context of the current span (`traceparent`, and `tracestate` when it
    has one): to store with a run, or send with a call. Empty with tracing off."""
    if _state.tracer is None:
        return {}
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier


def _extract(carrier: Mapping[str, Any]) -> Any:
    """The context of a W3C `carrier` (an empty one without a valid `traceparent`)."""
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    text = {key: value for key, value in carrier.items() if isinstance(value, str)}
    return TraceContextTextMapPropagator().extract(text)


# -- MCP calls -------------------------------------------------------------------------------


class McpCall:
    """An MCP call in progress: `headers` carry its trace context to the server (empty
    with tracing off); `failed` marks a tool's error result (`isError`)."""

    def __init__(self, span: Span | None, headers: dict[str, str]) -> None:
        self.span = span
        self.headers = headers

    def failed(self, message: str | None = None) -> None:
        if self.span is None:
            return
        from opentelemetry.trace import StatusCode

        self.span.set_attribute("error.type", "tool_error")
        self.span.set_status(StatusCode.ERROR, message)


_UNTRACED_MCP: AbstractContextManager[McpCall] = nullcontext(McpCall(None, {}))


def mcp_client_span(
    method: str, target: str | None, url: str | None, server: str
) -> AbstractContextManager[McpCall]:
    """The client span of one MCP request (`tools/call add`: `method` and its `target`, the
    tool) to `server` (its name in mcp.json) at `url`, on the MCP semantic conventions;
    a no-op with tracing off. Send `call.headers` with the request: its `traceparent` makes
    the server's spans children of this one."""
    tracer = _state.tracer
    if tracer is None:
        return _UNTRACED_MCP
    return _mcp_client_span(tracer, method, target, url, server)


@contextmanager
def _mcp_client_span(
    tracer: Tracer, method: str, target: str | None, url: str | None, server: str
) -> Iterator[McpCall]:
    from opentelemetry.trace import SpanKind, use_span

    attributes: dict[str, str | int] = {
        "mcp.method.name": method,
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "agentctl.mcp.server": server,
    }
    if method == "tools/call" and target:
        attributes["gen_ai.operation.name"] = "execute_tool"
        attributes["gen_ai.tool.name"] = target
    attributes.update(server_address(url))
    name = f"{method} {target}" if target else method
    span = tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
    with use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        try:
            yield McpCall(span, trace_context())
        except Exception as exc:
            record_exception(span, exc)
            raise


def server_address(url: str | None) -> dict[str, str | int]:
    """`server.address` and `server.port` of `url` (nothing for an in-process call, or a
    value that is no URL)."""
    if not url:
        return {}
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return {}
    if not parts.hostname:
        return {}
    return {"server.address": parts.hostname, "server.port": port}


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
        record_exception(span, exc)
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
