"""A run's spans on the OpenTelemetry GenAI conventions, caught by the OpenTelemetry SDK's
in-memory exporter: the tree (request → run → model calls, tools, subagents, MCP calls),
their `gen_ai.*` attributes, message content only when opted in, and the trace context
carried to the MCP server and stored with the run."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.types import Receive, Scope, Send

from agentctl.observability import configure_tracing, shutdown_tracing
from agentctl.server.platform_host import Platform
from agentctl.testing import ScriptedModelServer
from agentctl.testing.demo import write_demo
from agentctl.testing.mcp_servers import calculator, serve
from tests.server.conftest import (
    PLATFORM_OPERATOR,
    Running,
    agent_files,
    call,
    running_server,
    sdk,
    upload,
    user,
)

# A real deep agent on the scripted model and MCP servers: about a second per test.
pytestmark = pytest.mark.slow

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
SECRET_WORDS = "the-password-is-swordfish"
SUBTASK = "\n".join([call("lookup", topic="otel"), "@say found: {last_tool_result}"])
SCRIPT = "\n".join(
    [
        f"remember {SECRET_WORDS}",
        call("add", a=2, b=3),
        call("task", subagent_type="researcher", description=SUBTASK),
        call("no_such_tool"),
        "@say done: {last_tool_result}",
    ]
)


class Headers:
    """ASGI middleware keeping the `traceparent` of each request to the app it wraps."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.traceparents: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for name, value in scope["headers"]:
                if name == b"traceparent":
                    self.traceparents.append(value.decode())
        await self.app(scope, receive, send)


@pytest.fixture
def calc() -> Iterator[tuple[Headers, int]]:
    app = Headers(calculator().streamable_http_app())
    with serve(app) as port:
        yield app, port


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    configure_tracing(None, "agentctl-test", exporter=exporter)
    try:
        yield exporter
    finally:
        shutdown_tracing()


@pytest.fixture
async def traced(
    tmp_path: Path, calc: tuple[Headers, int], library_port: int
) -> AsyncIterator[Running]:
    root = write_demo(
        tmp_path / "demo",
        f"http://127.0.0.1:{calc[1]}/mcp",
        f"http://127.0.0.1:{library_port}/sse",
    )
    async with running_server(root, tmp_path / "data") as running:
        yield running


async def run_traced(agent: Running) -> dict[str, Any]:
    """The script run on a new thread by a caller that sent a W3C traceparent."""
    client = sdk(agent.url, headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"})
    try:
        thread = await client.threads.create()
        result = await client.runs.wait(thread["thread_id"], "demo", input=user(SCRIPT))
        assert isinstance(result, dict)
        result["thread_id"] = thread["thread_id"]
        return result
    finally:
        await client.aclose()


def named(spans: list[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [span for span in spans if (span.name or "").startswith(prefix)]


def only(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    found = [span for span in spans if span.name == name]
    assert len(found) == 1, (name, [span.name for span in spans])
    return found[0]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def shown_kwargs(run: Any) -> dict[str, Any]:
    """A run's `kwargs` as the API shows them (the SDK's `Run` type leaves them out)."""
    kwargs = run["kwargs"]
    assert isinstance(kwargs, dict)
    return kwargs


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def test_a_run_is_a_tree_of_genai_spans(
    spans: InMemorySpanExporter, traced: Running, calc: tuple[Headers, int]
) -> None:
    result = await run_traced(traced)
    assert result["messages"][-1]["content"].startswith("done:")
    finished = list(spans.get_finished_spans())
    assert {span.context.trace_id for span in finished} >= {int(TRACE_ID, 16)}

    # The run continues the trace of the request that created it, whose caller sent it.
    run = only(finished, "run")
    request = only(finished, "POST /threads/{thread_id}/runs/wait")
    assert parent_of(request) == int(CALLER_SPAN, 16)
    assert run.context.trace_id == int(TRACE_ID, 16)
    assert parent_of(run) == request.context.span_id
    assert attrs(run)["gen_ai.agent.name"] == "demo"
    assert attrs(run)["gen_ai.conversation.id"] == result["thread_id"]

    # The main agent's model calls: children of the run, with model, tokens, finish reason.
    chats = named(finished, "chat ")
    main_chats = [span for span in chats if parent_of(span) == run.context.span_id]
    assert len(main_chats) == 4  # add, task, the unknown tool, the answer
    first = attrs(main_chats[0])
    assert main_chats[0].name == "chat scripted"
    assert main_chats[0].kind == SpanKind.CLIENT
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.provider.name"] == "openai"
    assert first["gen_ai.request.model"] == "scripted"
    assert first["gen_ai.response.model"] == "scripted"
    assert first["gen_ai.agent.name"] == "demo"
    assert first["gen_ai.conversation.id"] == result["thread_id"]
    assert first["gen_ai.usage.input_tokens"] > 0
    assert first["gen_ai.usage.output_tokens"] > 0
    # the scripted model reports a quarter of the prompt read from its cache
    assert 0 < first["gen_ai.usage.cache_read.input_tokens"] < first["gen_ai.usage.input_tokens"]
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert first["server.address"] == "127.0.0.1"
    assert attrs(main_chats[-1])["gen_ai.response.finish_reasons"] == ("stop",)

    # A tool: execute_tool, child of the run; an MCP tool's call has a client span under it.
    add = only(finished, "execute_tool add")
    assert parent_of(add) == run.context.span_id
    assert add.kind == SpanKind.INTERNAL
    assert attrs(add)["gen_ai.operation.name"] == "execute_tool"
    assert attrs(add)["gen_ai.tool.name"] == "add"
    assert attrs(add)["gen_ai.tool.call.id"]
    mcp_add = only(finished, "tools/call add")
    assert parent_of(mcp_add) == add.context.span_id
    assert mcp_add.kind == SpanKind.CLIENT
    assert attrs(mcp_add) | {"server.port": 0} == {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "agentctl.mcp.server": "calc",
        "server.address": "127.0.0.1",
        "server.port": 0,
    }
    # ... whose context reached the MCP server: its spans would be children of it.
    sent = {header.split("-")[2] for header in calc[0].traceparents}
    assert f"{mcp_add.context.span_id:016x}" in sent
    assert {header.split("-")[1] for header in calc[0].traceparents} == {TRACE_ID}

    # A subagent: invoke_agent, parent of its own model calls and tools (an MCP one here).
    researcher = only(finished, "invoke_agent researcher")
    assert parent_of(researcher) == run.context.span_id
    assert attrs(researcher)["gen_ai.operation.name"] == "invoke_agent"
    assert attrs(researcher)["gen_ai.agent.name"] == "researcher"
    assert attrs(researcher)["gen_ai.provider.name"] == "openai"
    assert attrs(researcher)["gen_ai.request.model"] == "scripted"
    inner = [span for span in finished if parent_of(span) == researcher.context.span_id]
    assert sorted(span.name for span in inner) == ["chat scripted", "chat scripted",
                                                   "execute_tool lookup"]  # fmt: skip
    assert {attrs(span).get("gen_ai.agent.name") for span in inner} == {"researcher", None}
    lookup = only(finished, "execute_tool lookup")
    assert parent_of(only(finished, "tools/call lookup")) == lookup.context.span_id

    # A tool the model got wrong: the span says it failed.
    wrong = only(finished, "execute_tool no_such_tool")
    assert wrong.status.status_code == StatusCode.ERROR
    assert attrs(wrong)["error.type"] == "tool_error"

    # No content by default: no message, argument or result on any span.
    for span in finished:
        assert not {key for key in attrs(span) if key.startswith(
            ("gen_ai.input", "gen_ai.output", "gen_ai.system", "gen_ai.tool.call.arg",
             "gen_ai.tool.call.result"))}, span.name  # fmt: skip
        assert SECRET_WORDS not in json.dumps(attrs(span), default=str)


async def test_message_content_only_when_opted_in(traced: Running) -> None:
    exporter = InMemorySpanExporter()
    configure_tracing(None, "agentctl-test", capture_content=True, exporter=exporter)
    try:
        await run_traced(traced)
    finally:
        shutdown_tracing()
    finished = list(exporter.get_finished_spans())
    run = only(finished, "run")
    first = next(s for s in named(finished, "chat ") if parent_of(s) == run.context.span_id)
    sent = json.loads(attrs(first)["gen_ai.input.messages"])
    assert sent == [{"role": "user", "parts": [{"type": "text", "content": SCRIPT}]}]
    system = json.loads(attrs(first)["gen_ai.system_instructions"])
    assert "You are the demo agent." in system[0]["content"]
    [answer] = json.loads(attrs(first)["gen_ai.output.messages"])
    assert answer["role"] == "assistant"
    assert answer["finish_reason"] == "tool_calls"
    [tool_call] = answer["parts"]
    assert tool_call["type"] == "tool_call"
    assert (tool_call["name"], tool_call["arguments"]) == ("add", {"a": 2, "b": 3})

    add = attrs(only(finished, "execute_tool add"))
    assert json.loads(add["gen_ai.tool.call.arguments"]) == {"a": 2, "b": 3}
    assert add["gen_ai.tool.call.result"] == "5"
    researcher = attrs(only(finished, "invoke_agent researcher"))
    [task] = json.loads(researcher["gen_ai.input.messages"])
    assert task["parts"][0]["content"] == SUBTASK
    [found] = json.loads(researcher["gen_ai.output.messages"])
    assert found["parts"][0]["content"].startswith("found: the library says otel")


async def test_with_tracing_off_a_run_makes_no_span_and_keeps_no_context(agent: Running) -> None:
    exporter = InMemorySpanExporter()
    configure_tracing(None, "agentctl-test", exporter=exporter)
    shutdown_tracing()  # off again: nothing is exported any more
    client = sdk(agent.url, headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"})
    try:
        thread = await client.threads.create()
        await client.runs.wait(thread["thread_id"], "demo", input=user(call("add", a=1, b=1)))
        [run] = await client.runs.list(thread["thread_id"])
    finally:
        await client.aclose()
    assert exporter.get_finished_spans() == ()
    stored = await agent.server.storage.runs.get(run["run_id"])
    assert stored is not None
    assert "trace_context" not in stored.kwargs
    assert "trace_context" not in shown_kwargs(run)


async def test_the_callers_trace_context_is_kept_with_the_run_not_shown(
    spans: InMemorySpanExporter, agent: Running
) -> None:
    client = sdk(agent.url, headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"})
    try:
        thread = await client.threads.create()
        created = await client.runs.create(thread["thread_id"], "demo", input=user("@say hi"))
        await client.runs.join(thread["thread_id"], created["run_id"])
        shown = await client.runs.get(thread["thread_id"], created["run_id"])
    finally:
        await client.aclose()
    assert "trace_context" not in shown_kwargs(created)
    assert "trace_context" not in shown_kwargs(shown)
    stored = await agent.server.storage.runs.get(created["run_id"])
    assert stored is not None
    traceparent = stored.kwargs["trace_context"]["traceparent"]
    assert traceparent.split("-")[1] == TRACE_ID
    run = only(list(spans.get_finished_spans()), "run")
    assert run.context.trace_id == int(TRACE_ID, 16)
    assert f"{parent_of(run):016x}" == traceparent.split("-")[2]


async def test_an_agent_called_by_another_continues_its_trace(
    spans: InMemorySpanExporter,
    platform: tuple[Platform, httpx.AsyncClient],
    tmp_path: Path,
    model_server: ScriptedModelServer,
) -> None:
    _, http = platform
    researcher = agent_files(tmp_path / "researcher", "researcher", "You research.")
    asker = agent_files(tmp_path / "asker", "asker", "You ask the researcher.")
    (asker / "mcp.json").write_text(
        json.dumps({"mcpServers": {"research": {"agent": "researcher"}}})
    )
    for root in (researcher, asker):
        deployed = await upload(http, root, model_server)
        assert deployed.status_code == 201, deployed.text
    ask = call("researcher", message="@say found it", thread_id=str(uuid.uuid4()))
    answer = await http.post(
        "/agents/asker/runs/wait",
        json={"assistant_id": "asker", "input": user(f"{ask}\n@say {{last_tool_result}}")},
        headers=PLATFORM_OPERATOR,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["messages"][-1]["content"] == "found it"

    finished = list(spans.get_finished_spans())
    runs = {attrs(span)["gen_ai.agent.name"]: span for span in named(finished, "run")}
    asked, called = runs["asker"], runs["researcher"]
    # asker's run → its tool → the MCP client span → researcher's MCP request → its run
    tool = only(finished, "execute_tool researcher")
    client_call = only(finished, "tools/call researcher")
    assert parent_of(tool) == asked.context.span_id
    assert parent_of(client_call) == tool.context.span_id
    assert attrs(client_call)["agentctl.mcp.server"] == "research"
    assert "server.address" not in attrs(client_call)  # in-process: no address
    mcp_requests = [s for s in finished if parent_of(s) == client_call.context.span_id]
    assert mcp_requests
    assert {s.kind for s in mcp_requests} == {SpanKind.SERVER}
    assert {s.name for s in mcp_requests} == {"POST /mcp"}
    assert parent_of(called) in {s.context.span_id for s in mcp_requests}
    assert called.context.trace_id == asked.context.trace_id
    researcher_chat = [
        s for s in named(finished, "chat ") if parent_of(s) == called.context.span_id
    ]
    assert attrs(researcher_chat[0])["gen_ai.agent.name"] == "researcher"


@pytest.mark.parametrize("capture", [False, True])
def test_a_failed_steps_message_is_on_its_span_only_with_content_on(capture: bool) -> None:
    from agentctl.observability import tracing
    from agentctl.runtime import genai_spans

    exporter = InMemorySpanExporter()
    configure_tracing(None, "agentctl-test", capture_content=capture, exporter=exporter)
    try:
        tracer = tracing.tracer()
        assert tracer is not None
        with pytest.raises(ValueError, match="no page"), genai_spans._span(tracer, "t", {}):
            raise ValueError("no page for the query 'alice's diagnosis'")
    finally:
        shutdown_tracing()
    [span] = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert attrs(span)["error.type"] == "ValueError"
    recorded = json.dumps([dict(event.attributes or {}) for event in span.events])
    assert ("diagnosis" in recorded) is capture


def test_a_model_calls_attributes_are_read_once_per_model_object() -> None:
    from langchain_openai import ChatOpenAI

    from agentctl.runtime.genai_spans import GenAiSpans

    def model(name: str) -> ChatOpenAI:
        return ChatOpenAI(model=name, api_key="unused", base_url="http://127.0.0.1:9/v1")

    spans, first = GenAiSpans("demo"), model("gpt-a")
    name, attributes = spans._model_attributes(first)
    assert name == "chat gpt-a"
    assert attributes["gen_ai.request.model"] == "gpt-a"
    assert attributes["server.port"] == 9
    assert spans._model_attributes(first)[1] is attributes  # kept
    second = model("gpt-b")  # another object: its own attributes, even on a reused id
    spans._models[id(second)] = (first, name, attributes)
    assert spans._model_attributes(second)[0] == "chat gpt-b"
