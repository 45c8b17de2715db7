"""Logs, metrics and traces of the server process.

- `logs`: `configure_logging` (json or text on stderr, uvicorn included), `bind_run`.
- `metrics`: a Prometheus registry per application; run, stream and HTTP metrics.
- `tracing`: OpenTelemetry spans per request and per run, exported over OTLP/HTTP
  (the `otel` extra; imported only when an endpoint is configured); the trace context
  stored with runs and sent with MCP calls. The spans of model and tool calls inside a run
  are the runtime's (`runtime/genai_spans.py`).
"""

from __future__ import annotations

from agentctl.observability.logs import bind, bind_run, configure_logging, redact
from agentctl.observability.metrics import (
    HttpMetrics,
    Metrics,
    run_finished,
    run_started,
    stream_closed,
    stream_opened,
    tokens_used,
    webhook_delivered,
)
from agentctl.observability.tracing import (
    HttpTracing,
    configure_tracing,
    flush_tracing,
    run_span,
    shutdown_tracing,
)

__all__ = [
    "HttpMetrics",
    "HttpTracing",
    "Metrics",
    "bind",
    "bind_run",
    "configure_logging",
    "configure_tracing",
    "flush_tracing",
    "redact",
    "run_finished",
    "run_span",
    "run_started",
    "shutdown_tracing",
    "stream_closed",
    "stream_opened",
    "tokens_used",
    "webhook_delivered",
]
