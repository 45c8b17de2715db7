"""Logs, metrics and traces: JSON log lines with run context and no secrets, Prometheus
metrics by route template, and spans exported to a real OTLP/HTTP receiver."""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import logging
import socket
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

from agentctl.errors import UserError
from agentctl.observability import (
    HttpMetrics,
    Metrics,
    bind_run,
    configure_logging,
    configure_tracing,
    flush_tracing,
    run_finished,
    run_span,
    run_started,
    shutdown_tracing,
)
from agentctl.observability.tracing import tracing_enabled
from agentctl.server.http import uvicorn_config
from agentctl.storage.base import Run
from tests.conftest import eventually
from tests.server.conftest import Running, _environ_untouched, _model_env, running_server, user  # noqa: F401 (autouse fixtures)

SECRET = "sk-live-0123456789abcdef"


# -- logs ------------------------------------------------------------------------------------


@pytest.fixture
def log_to() -> Iterator[Any]:
    """`log_to(format)`: configure logging into a buffer; returns the buffer. Undone after."""
    root = logging.getLogger()
    level = root.level
    names = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi", "httpx", "httpcore")
    touched = [logging.getLogger(name) for name in names]
    saved = [(lg.level, lg.propagate, list(lg.handlers)) for lg in touched]
    handlers: list[logging.Handler] = []

    def configure(format: str, level: str = "info") -> io.StringIO:
        buffer = io.StringIO()
        handlers.append(configure_logging(format, level, stream=buffer))
        return buffer

    yield configure
    for handler in handlers:
        root.removeHandler(handler)
    root.setLevel(level)
    for lg, (lvl, propagate, old) in zip(touched, saved, strict=True):
        lg.setLevel(lvl)
        lg.propagate = propagate
        lg.handlers[:] = old


def lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


async def test_json_lines_carry_the_run_context(log_to: Any) -> None:
    buffer = log_to("json")
    log = logging.getLogger("agentctl.engine")

    async def in_a_task() -> None:
        log.info("from a task")

    log.info("before")
    with bind_run("run-1", "thread-1", "asst-1", attempt=2):
        log.warning("run %s started", "run-1")
        await asyncio.create_task(in_a_task())
    with bind_run("run-2", "thread-2"):
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            log.exception("it failed")
    log.info("after")

    before, started, task, failed, after = lines(buffer)
    assert before["message"] == "before"
    assert before["logger"] == "agentctl.engine"
    assert before["level"] == "info"
    assert before["ts"].endswith("Z")
    assert "T" in before["ts"]
    assert "run_id" not in before
    assert "run_id" not in after
    assert started["message"] == "run run-1 started"
    assert started["level"] == "warning"
    assert (started["run_id"], started["thread_id"]) == ("run-1", "thread-1")
    assert (started["assistant_id"], started["attempt"]) == ("asst-1", 2)
    assert (task["message"], task["run_id"], task["thread_id"]) == (
        "from a task",
        "run-1",
        "thread-1",
    )
    assert (failed["run_id"], failed["thread_id"]) == ("run-2", "thread-2")
    assert "assistant_id" not in failed
    assert "RuntimeError: boom" in failed["exc_info"]


async def test_concurrent_runs_keep_their_own_context(log_to: Any) -> None:
    buffer = log_to("json")
    log = logging.getLogger("agentctl.engine")

    async def execute(run_id: str) -> None:
        with bind_run(run_id, f"thread-of-{run_id}"):
            await asyncio.sleep(0)
            log.info("step")
            await asyncio.sleep(0)
            log.info("done")

    await asyncio.gather(*(execute(f"run-{n}") for n in range(3)))
    for line in lines(buffer):
        assert line["thread_id"] == f"thread-of-{line['run_id']}"
    assert len(lines(buffer)) == 6


def test_secrets_are_redacted(log_to: Any) -> None:
    buffer = log_to("json")
    log = logging.getLogger("agentctl.server")
    log.info("calling the provider with Authorization: Bearer %s", SECRET)
    log.info("headers %s", {"x-api-key": SECRET, "host": "example.com"})
    log.info("raw headers %s", [(b"authorization", f"Bearer {SECRET}".encode())])
    log.info("token in passing: bearer %s.abc", SECRET)
    try:
        raise ValueError(f"rejected x-api-key={SECRET}")
    except ValueError:
        log.exception("failed")
    log.info("a field", extra={"detail": f"Bearer {SECRET}"})
    log.info("GET /connections/callback?code=%s&state=%s", SECRET, SECRET)

    text = buffer.getvalue()
    assert SECRET not in text
    found = lines(buffer)
    assert found[0]["message"] == "calling the provider with Authorization: ***"
    assert found[1]["message"] == "headers {'x-api-key': '***', 'host': 'example.com'}"
    assert "example.com" in found[1]["message"]
    assert "Bearer ***" in found[3]["message"]
    assert "x-api-key=***" in found[4]["exc_info"]
    assert found[5]["detail"] == "Bearer ***"
    assert found[6]["message"] == "GET /connections/callback?code=***&state=***"


def test_text_lines_are_readable(log_to: Any) -> None:
    buffer = log_to("text", "warning")
    log = logging.getLogger("agentctl.engine")
    log.info("hidden below the level")
    with bind_run("run-1", "thread-1"):
        log.warning("slow run")
    (line,) = buffer.getvalue().splitlines()
    assert "WARNING" in line
    assert "agentctl.engine: slow run run_id=run-1 thread_id=thread-1" in line


async def _hello(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hi"})


async def test_uvicorn_logs_go_through_the_formatter(log_to: Any) -> None:
    buffer = log_to("json")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    uv = uvicorn.Server(uvicorn_config(_hello, access_log=True, loop="asyncio"))
    task = asyncio.create_task(uv.serve(sockets=[sock]))
    try:
        while not uv.started:
            await asyncio.sleep(0.01)
        async with httpx.AsyncClient() as client:
            response = await client.get(
                f"http://127.0.0.1:{port}/hello?api_key={SECRET}",
                headers={"Authorization": f"Bearer {SECRET}"},
            )
        assert response.status_code == 200
    finally:
        uv.should_exit = True
        await task
        sock.close()
    assert SECRET not in buffer.getvalue()
    found = lines(buffer)
    access = [line for line in found if line["logger"] == "uvicorn.access"]
    assert len(access) == 1
    assert "GET /hello?api_key=*** HTTP/1.1" in access[0]["message"]
    assert any(line["logger"] == "uvicorn.error" for line in found)  # "Started server …"


# -- metrics ---------------------------------------------------------------------------------


def a_run(run_id: str = "run-1", attempt: int = 0) -> Run:
    return Run(run_id=run_id, thread_id="thread-1", assistant_id="asst-1", attempt=attempt)


def test_run_hooks_record_into_the_bound_metrics() -> None:
    mine, other = Metrics(), Metrics()
    run_started(a_run())  # no app bound: nothing recorded, nothing raised
    run_finished(a_run(), "success", 1.0)
    with mine.bind():
        run_started(a_run("run-1"))
        run_started(a_run("run-2"))
        assert mine.registry.get_sample_value("agentctl_runs_executing") == 2
        run_finished(a_run("run-1"), "success", 0.07)
        run_finished(a_run("run-2"), "error", 42.0)
    sample = mine.registry.get_sample_value
    assert sample("agentctl_runs_executing") == 0
    assert sample("agentctl_runs_finished_total", {"status": "success"}) == 1
    assert sample("agentctl_runs_finished_total", {"status": "error"}) == 1
    assert sample("agentctl_runs_finished_total", {"status": "timeout"}) == 0
    bucket = "agentctl_run_duration_seconds_bucket"
    assert sample(bucket, {"status": "success", "le": "0.05"}) == 0
    assert sample(bucket, {"status": "success", "le": "0.1"}) == 1
    assert sample(bucket, {"status": "error", "le": "30.0"}) == 0
    assert sample(bucket, {"status": "error", "le": "60.0"}) == 1
    assert sample(bucket, {"status": "error", "le": "600.0"}) == 1
    assert other.registry.get_sample_value("agentctl_runs_executing") == 0
    assert (
        other.registry.get_sample_value("agentctl_runs_finished_total", {"status": "success"}) == 0
    )


@pytest.fixture
async def agent(demo: Path, tmp_path: Path) -> AsyncIterator[Running]:
    async with running_server(demo, tmp_path / "data") as running:
        yield running


@pytest.fixture
async def http(agent: Running) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=agent.url) as client:
        yield client


async def test_tasks_started_in_the_lifespan_record_into_their_app() -> None:
    """The engine starts its workers in the app's lifespan: their hooks reach that app."""
    metrics = Metrics()

    async def execute() -> None:
        run_started(a_run())
        run_finished(a_run(), "success", 0.2)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await asyncio.create_task(execute())
        yield

    app = Starlette(lifespan=lifespan)
    app.add_middleware(HttpMetrics, metrics=metrics)
    uv = uvicorn.Server(uvicorn_config(app, loop="asyncio"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    task = asyncio.create_task(uv.serve(sockets=[sock]))
    while not uv.started:
        await asyncio.sleep(0.01)
    uv.should_exit = True
    await task
    sock.close()
    finished = {"status": "success"}
    assert metrics.registry.get_sample_value("agentctl_runs_finished_total", finished) == 1
    assert metrics.registry.get_sample_value("agentctl_runs_executing") == 0


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(http: httpx.AsyncClient) -> Samples:
    response = await http.get("/metrics")
    assert response.status_code == 200
    found: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def requests_of(found: Samples, method: str, route: str, status: int) -> float:
    labels = (("method", method), ("route", route), ("status", str(status)))
    return found.get(("agentctl_http_requests_total", labels), 0)


async def test_http_metrics_use_route_templates(agent: Running, http: httpx.AsyncClient) -> None:
    thread_id = (await agent.client.threads.create())["thread_id"]
    await agent.client.runs.wait(thread_id, "demo", input=user("count me"))
    assert (await http.get(f"/threads/{thread_id}")).status_code == 200
    assert (await http.get(f"/threads/{thread_id}/runs")).status_code == 200
    assert (await http.get(f"/threads/{uuid.uuid4()}")).status_code == 404
    assert (await http.get(f"/nowhere/{thread_id}")).status_code == 404

    found = await scrape(http)
    assert requests_of(found, "POST", "/threads", 200) == 1
    assert requests_of(found, "POST", "/threads/{thread_id}/runs/wait", 200) == 1
    assert requests_of(found, "GET", "/threads/{thread_id}", 200) == 1
    assert requests_of(found, "GET", "/threads/{thread_id}", 404) == 1
    assert requests_of(found, "GET", "/threads/{thread_id}/runs", 200) == 1
    assert requests_of(found, "GET", "unmatched", 404) == 1
    duration = ("method", "GET"), ("route", "/threads/{thread_id}")
    assert found[("agentctl_http_request_duration_seconds_count", duration)] == 2
    # No id ever becomes a label value.
    assert not any(thread_id in value for _, labels in found for _, value in labels)
    # The existing gauges are still there, beside the new metrics.
    assert found[("agentctl_runs", (("status", "success"),))] == 1
    assert found[("agentctl_run_queue_depth", ())] == 0
    assert found[("agentctl_stream_subscribers", ())] == 0
    assert ("agentctl_runs_executing", ()) in found
    assert any(name == "process_resident_memory_bytes" for name, _ in found)

    again = await scrape(http)  # the first scrape is counted once it was answered
    assert requests_of(again, "GET", "/metrics", 200) == 1


async def test_stream_subscribers_follow_open_streams(
    agent: Running, http: httpx.AsyncClient
) -> None:
    thread_id = (await agent.client.threads.create())["thread_id"]

    async def subscribers(count: int) -> bool:
        return (await scrape(http))[("agentctl_stream_subscribers", ())] == count

    async with httpx.AsyncClient(base_url=agent.url) as streaming:
        async with streaming.stream("GET", f"/threads/{thread_id}/stream") as first:
            assert first.status_code == 200
            await eventually(lambda: subscribers(1))
            async with streaming.stream("GET", f"/threads/{thread_id}/stream") as second:
                assert second.status_code == 200
                await eventually(lambda: subscribers(2))
            await eventually(lambda: subscribers(1))
        await eventually(lambda: subscribers(0))

    # A run's join stream counts while it is followed, and is gone once it ends.
    run = await agent.client.runs.create(thread_id, "demo", input=user("count me"))
    await agent.client.runs.join(thread_id, run["run_id"])
    async for _ in agent.client.runs.join_stream(thread_id, run["run_id"]):
        pass
    await eventually(lambda: subscribers(0))


# -- traces ----------------------------------------------------------------------------------


class OtlpReceiver:
    """A real OTLP/HTTP trace receiver on 127.0.0.1: every span it is sent, decoded."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.service_names: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for resource_spans in request.resource_spans:
                    for attribute in resource_spans.resource.attributes:
                        if attribute.key == "service.name":
                            receiver.service_names.append(attribute.value.string_value)
                    for scope_spans in resource_spans.scope_spans:
                        receiver.spans.extend(scope_spans.spans)
                answer = ExportTraceServiceResponse().SerializeToString()
                status = 200 if self.path == "/v1/traces" else 404
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def named(self, name: str) -> list[Span]:
        return [span for span in self.spans if span.name == name]


def attributes(span: Span) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for attribute in span.attributes:
        value = attribute.value
        found[attribute.key] = getattr(value, value.WhichOneof("value") or "string_value")
    return found


@pytest.fixture
def collector() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver()
    receiver.thread.start()
    configure_tracing(receiver.url, "agentctl-test")
    try:
        yield receiver
    finally:
        shutdown_tracing()
        receiver.server.shutdown()
        receiver.server.server_close()


TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


async def test_requests_are_traced_with_their_route_template(
    collector: OtlpReceiver, agent: Running, http: httpx.AsyncClient
) -> None:
    thread_id = (await agent.client.threads.create())["thread_id"]
    traceparent = f"00-{TRACE_ID}-{PARENT_ID}-01"
    response = await http.get(f"/threads/{thread_id}", headers={"traceparent": traceparent})
    assert response.status_code == 200
    assert (await http.get(f"/threads/{uuid.uuid4()}")).status_code == 404
    assert await asyncio.to_thread(flush_tracing)

    (span,) = [
        s for s in collector.named("GET /threads/{thread_id}") if s.trace_id.hex() == TRACE_ID
    ]
    assert span.parent_span_id.hex() == PARENT_ID
    assert span.kind == Span.SPAN_KIND_SERVER
    found = attributes(span)
    assert found["http.route"] == "/threads/{thread_id}"
    assert found["http.request.method"] == "GET"
    assert found["http.response.status_code"] == 200
    assert found["url.path"] == f"/threads/{thread_id}"
    assert span.status.code != Status.STATUS_CODE_ERROR
    (missing,) = [
        s for s in collector.named("GET /threads/{thread_id}") if s.trace_id.hex() != TRACE_ID
    ]
    assert attributes(missing)["http.response.status_code"] == 404
    assert not missing.parent_span_id  # no traceparent: a trace of its own
    (created,) = collector.named("POST /threads")
    assert attributes(created)["http.response.status_code"] == 200
    assert "agentctl-test" in collector.service_names


async def test_run_spans(collector: OtlpReceiver) -> None:
    with run_span(a_run("run-ok", attempt=1), "demo") as trace:
        await asyncio.sleep(0)
        trace.outcome("success")
    with run_span(a_run("run-timeout")) as trace:
        trace.outcome("timeout", {"error": "TimeoutError", "message": "too slow"})
    with pytest.raises(RuntimeError), run_span(a_run("run-broken")):
        raise RuntimeError(f"failed with Authorization: Bearer {SECRET}")
    with pytest.raises(asyncio.CancelledError), run_span(a_run("run-cancelled")):
        raise asyncio.CancelledError
    assert await asyncio.to_thread(flush_tracing)

    runs = {attributes(span)["agentctl.run_id"]: span for span in collector.named("run")}
    ok = runs["run-ok"]
    assert attributes(ok) == {
        "agentctl.run_id": "run-ok",
        "agentctl.thread_id": "thread-1",
        "agentctl.assistant_id": "asst-1",
        "agentctl.attempt": 1,
        "agentctl.run.status": "success",
        "gen_ai.agent.name": "demo",
        "gen_ai.conversation.id": "thread-1",
    }
    assert ok.status.code == Status.STATUS_CODE_UNSET
    assert runs["run-timeout"].status.code == Status.STATUS_CODE_ERROR
    assert attributes(runs["run-timeout"])["error.type"] == "TimeoutError"
    broken = runs["run-broken"]
    assert broken.status.code == Status.STATUS_CODE_ERROR
    (event,) = broken.events
    assert event.name == "exception"
    assert SECRET not in str(event)
    assert runs["run-cancelled"].status.code == Status.STATUS_CODE_UNSET


def test_tracing_off_costs_nothing() -> None:
    configure_tracing(None, "agentctl")
    assert not tracing_enabled()
    with run_span(a_run()) as trace:
        trace.outcome("error")  # a no-op
    assert flush_tracing()


def test_tracing_without_the_otel_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # The packages made absent as for a server installed without the extra.
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(UserError, match=r"pip install 'agentctl\[otel\]'"):
        configure_tracing("http://127.0.0.1:4318", "agentctl")
    assert not tracing_enabled()
