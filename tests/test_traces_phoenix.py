"""Traces land in a real OpenTelemetry backend, Arize Phoenix (tests/phoenix.py): `agentctl
dev` exports a run's tree of spans there over OTLP/HTTP, in the trace its caller started,
and the MCP server it calls — with a tracer of its own, exporting to Phoenix too — puts its
span under our MCP client span through the `traceparent` it was sent."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client
from mcp.server.fastmcp import Context, FastMCP
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.propagate import inject
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agentctl.testing.demo import write_demo
from agentctl.testing.mcp_servers import serve
from tests.dev_process import StartDev
from tests.phoenix import Phoenix, PhoenixUnavailable

pytestmark = pytest.mark.slow

SUBTASK = "\n".join(['@call lookup {"topic": "otel"}', "@say found: {last_tool_result}"])
SCRIPT = "\n".join(
    [
        '@call add {"a": 2, "b": 3}',
        "@call task " + json.dumps({"subagent_type": "researcher", "description": SUBTASK}),
        "@say done: {last_tool_result}",
    ]
)


def provider(phoenix: Phoenix, service: str) -> TracerProvider:
    """A tracer provider of another service, exporting to Phoenix span by span."""
    made = TracerProvider(resource=Resource.create({"service.name": service}))
    exporter = OTLPSpanExporter(endpoint=f"{phoenix.otlp_endpoint}/v1/traces")
    made.add_span_processor(SimpleSpanProcessor(exporter))
    return made


def traced_calculator(tracer_provider: TracerProvider) -> FastMCP:
    """The calculator MCP server with its own tracing: a SERVER span per tool call, child
    of the context in the request's `traceparent` (the MCP conventions' server span)."""
    tracer = tracer_provider.get_tracer("calc-mcp")
    server = FastMCP("calc", stateless_http=True, json_response=True, log_level="WARNING")

    @server.tool()
    def add(a: int, b: int, ctx: Context) -> int:  # type: ignore[type-arg]
        """Add two integers."""
        request = ctx.request_context.request
        assert request is not None
        carrier = {k: v for k, v in request.headers.items() if k in ("traceparent", "tracestate")}
        parent = TraceContextTextMapPropagator().extract(carrier)
        attributes = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "add",
                      "gen_ai.operation.name": "execute_tool"}  # fmt: skip
        with tracer.start_as_current_span(
            "tools/call add", parent, kind=SpanKind.SERVER, attributes=attributes
        ):
            return a + b

    return server


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    try:
        with Phoenix(tmp_path_factory.mktemp("phoenix")) as running:
            yield running
    except PhoenixUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


def wait_for_spans(phoenix: Phoenix, trace_id: str, names: set[str]) -> list[dict[str, Any]]:
    """The spans of `trace_id` in Phoenix, once every one of `names` is among them."""
    deadline = time.monotonic() + 60
    while True:
        spans = [s for s in phoenix.spans() if s["context"]["trace_id"] == trace_id]
        if names <= {s["name"] for s in spans}:
            return spans
        assert time.monotonic() < deadline, (
            f"missing in Phoenix: {names - {s['name'] for s in spans}}; "
            f"got {sorted(s['name'] for s in spans)}"
        )
        time.sleep(0.5)


async def test_a_runs_spans_land_in_phoenix_linked_to_the_mcp_servers(
    phoenix: Phoenix,
    start_dev: StartDev,
    dev_env: dict[str, str],
    tmp_path: Path,
    library_port: int,
) -> None:
    mcp_tracing = provider(phoenix, "calc-mcp")
    caller_tracing = provider(phoenix, "sdk-caller")
    with serve(traced_calculator(mcp_tracing).streamable_http_app()) as calc_port:
        root = write_demo(
            tmp_path / "demo",
            f"http://127.0.0.1:{calc_port}/mcp",
            f"http://127.0.0.1:{library_port}/sse",
        )
        env = {**dev_env, "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.otlp_endpoint,
               "OTEL_SERVICE_NAME": "agentctl-dev"}  # fmt: skip
        dev = start_dev("--config", root / "agent.toml", "--port", "0", env=env)
        url = dev.ready()
        assert f"Tracing… to {phoenix.otlp_endpoint} as agentctl-dev" in dev.err

        # The caller starts the trace and sends it with its request (a W3C traceparent).
        tracer = caller_tracing.get_tracer("sdk-caller")
        with tracer.start_as_current_span("ask the demo agent", kind=SpanKind.CLIENT) as asked:
            headers: dict[str, str] = {}
            inject(headers)
            async with get_client(url=url, api_key=None, headers=headers) as client:
                thread = await client.threads.create()
                asked_for: dict[str, Any] = {"messages": [{"role": "user", "content": SCRIPT}]}
                result = await client.runs.wait(thread["thread_id"], "demo", input=asked_for)
        assert isinstance(result, dict)
        assert result["messages"][-1]["content"].startswith("done: found:")
        trace_id = f"{asked.get_span_context().trace_id:032x}"

        spans = wait_for_spans(
            phoenix,
            trace_id,
            {"ask the demo agent", "run", "chat scripted", "execute_tool add", "tools/call add",
             "invoke_agent researcher", "execute_tool lookup", "tools/call lookup"},
        )  # fmt: skip
    mcp_tracing.shutdown()
    caller_tracing.shutdown()
    dev.stop()

    by_id = {s["context"]["span_id"]: s for s in spans}

    def parent(span: dict[str, Any]) -> dict[str, Any]:
        return by_id[span["parent_id"]]

    def only(name: str, **attributes: Any) -> dict[str, Any]:
        found = [s for s in spans if s["name"] == name
                 and all(s["attributes"].get(k) == v for k, v in attributes.items())]  # fmt: skip
        assert len(found) == 1, (name, attributes, found)
        return found[0]

    # caller → the request → the run (executed later, in a worker task)
    run = only("run")
    request = parent(run)
    assert request["name"] == "POST /threads/{thread_id}/runs/wait"
    assert parent(request)["name"] == "ask the demo agent"
    assert run["attributes"]["gen_ai.agent.name"] == "demo"
    assert run["attributes"]["gen_ai.conversation.id"] == thread["thread_id"]

    # the main agent's model calls, with the conventions' attributes (Phoenix reads them as
    # LLM spans and counts their tokens)
    chats = sorted((s for s in spans if s["name"] == "chat scripted" and parent(s) is run),
                   key=lambda s: str(s["start_time"]))  # fmt: skip
    assert len(chats) == 3
    for chat in chats:
        attributes = chat["attributes"]
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.request.model"] == "scripted"
        assert attributes["gen_ai.response.model"] == "scripted"
        assert attributes["gen_ai.usage.input_tokens"] > 0
        assert attributes["gen_ai.usage.output_tokens"] > 0
        assert attributes["gen_ai.usage.cache_read.input_tokens"] > 0
        assert "gen_ai.input.messages" not in attributes  # content is opt-in
        assert chat["span_kind"] == "LLM"
    assert [c["attributes"]["gen_ai.response.finish_reasons"] for c in chats] == [
        ["tool_calls"], ["tool_calls"], ["stop"]]  # fmt: skip

    # a tool → our MCP client span → the MCP server's own span, through traceparent
    add = only("execute_tool add")
    assert parent(add) is run
    assert add["attributes"]["gen_ai.tool.name"] == "add"
    client_call = only("tools/call add", **{"agentctl.mcp.server": "calc"})
    assert parent(client_call) is add
    assert client_call["attributes"]["mcp.method.name"] == "tools/call"
    server_side = [s for s in spans if s["parent_id"] == client_call["context"]["span_id"]]
    assert [s["name"] for s in server_side] == ["tools/call add"]
    assert "agentctl.mcp.server" not in server_side[0]["attributes"]  # the server's own

    # a subagent: its model calls and its MCP tool under it
    researcher = only("invoke_agent researcher")
    assert parent(researcher) is run
    assert researcher["attributes"]["gen_ai.agent.name"] == "researcher"
    inner = sorted(s["name"] for s in spans if s["parent_id"] == researcher["context"]["span_id"])
    assert inner == ["chat scripted", "chat scripted", "execute_tool lookup"]
    lookup = only("execute_tool lookup")
    assert parent(only("tools/call lookup")) is lookup
