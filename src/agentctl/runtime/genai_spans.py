"""OpenTelemetry spans of a run's model calls, tool calls and subagents, on the GenAI
semantic conventions (`gen_ai.*`), nested under the run's span.

`GenAiSpans` is an agent middleware (the main agent and each subagent have one):

- a model call is a CLIENT span `chat {model}`: `gen_ai.operation.name` `chat`,
  `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.response.model`,
  `gen_ai.usage.input_tokens` / `output_tokens` / `cache_read.input_tokens`,
  `gen_ai.response.finish_reasons`, `gen_ai.conversation.id` (the thread);
- a tool call is an INTERNAL span `execute_tool {tool}` (`gen_ai.tool.name`,
  `gen_ai.tool.call.id`); an MCP tool's call has a CLIENT child `tools/call {tool}`
  (`mcp_tools.py`), whose `traceparent` makes the MCP server's spans its children;
- a subagent (the `task` tool) is an INTERNAL span `invoke_agent {subagent}`
  (`gen_ai.agent.name`), parent of the subagent's own model and tool calls.

Content — the messages sent and answered, tool arguments and results — goes on the spans only
when the operator opts in (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`), as
the conventions' JSON (`gen_ai.input.messages`, `gen_ai.output.messages`,
`gen_ai.system_instructions`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`).

With tracing off each call only checks a module variable (`tracing.tracer()`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import BaseMessage, ToolMessage
from langgraph.errors import GraphBubbleUp

from agentctl.metering.usage import finish_reason_of
from agentctl.observability import tracing
from agentctl.runtime import memory
from agentctl.runtime.metering import TASK_TOOL, ai_message

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

log = logging.getLogger(__name__)

# The argument of deepagents' subagent tool (`TASK_TOOL`) naming the subagent.
SUBAGENT_ARG = "subagent_type"

# langchain's provider names (`ls_provider`) that the conventions name otherwise.
PROVIDER_NAMES = {
    "azure": "azure.ai.openai",
    "azure_openai": "azure.ai.openai",
    "google_genai": "gcp.gemini",
    "google_vertexai": "gcp.vertex_ai",
    "google_anthropic_vertex": "gcp.vertex_ai",
    "amazon_bedrock": "aws.bedrock",
    "bedrock": "aws.bedrock",
    "bedrock_converse": "aws.bedrock",
    "mistral": "mistral_ai",
    "mistralai": "mistral_ai",
    "xai": "x_ai",
}
# Where a chat model keeps the endpoint it calls (OpenAI, Anthropic, Ollama and others).
_ENDPOINT_FIELDS = ("openai_api_base", "anthropic_api_url", "base_url", "endpoint")
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
# Model objects whose span attributes `GenAiSpans` keeps (those of its agent's models: more
# are ones a middleware made on the fly, which start the cache over).
_MODELS_KEPT = 16


class GenAiSpans(AgentMiddleware):  # type: ignore[misc]
    """The spans of one agent's (or subagent's) model and tool calls.

    `agent`: its name; `subagents`: the model (`provider:model`) of each subagent it may
    call with `task`, named on their `invoke_agent` spans."""

    def __init__(self, agent: str, subagents: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.agent = agent
        self.subagents = dict(subagents or {})
        # By model object (its id, with the object, so a reused id is no match): the name
        # and attributes of its calls' spans, read once (`_model_attributes`).
        self._models: dict[int, tuple[Any, str, dict[str, Any]]] = {}

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        tracer = tracing.tracer()
        if tracer is None:
            return await handler(request)
        try:
            name, attributes = self._model_span(request)
        except Exception:  # tracing never fails a run
            log.debug("no span for this model call", exc_info=True)
            return await handler(request)
        with _span(tracer, name, attributes, client=True) as span:
            response = await handler(request)
            _safely(_answered, span, response)
            return response

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        tracer = tracing.tracer()
        if tracer is None:
            return await handler(request)
        try:
            name, attributes = self._tool_span(request.tool_call)
        except Exception:  # tracing never fails a run
            log.debug("no span for this tool call", exc_info=True)
            return await handler(request)
        with _span(tracer, name, attributes) as span:
            result = await handler(request)
            _safely(_tool_answered, span, result, request.tool_call.get("name") == TASK_TOOL)
            return result

    def _tool_span(self, call: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        name, args = str(call.get("name") or ""), call.get("args") or {}
        attributes: dict[str, Any] = {}
        if call.get("id"):
            attributes["gen_ai.tool.call.id"] = str(call["id"])
        if name == TASK_TOOL and isinstance(args, Mapping) and args.get(SUBAGENT_ARG):
            subagent = str(args[SUBAGENT_ARG])
            span_name = f"invoke_agent {subagent}"
            attributes |= {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": subagent}
            attributes.update(_conversation())
            model = self.subagents.get(subagent)
            if model is not None:
                provider, _, model_name = model.partition(":")
                attributes["gen_ai.provider.name"] = PROVIDER_NAMES.get(provider, provider)
                attributes["gen_ai.request.model"] = model_name or model
            if tracing.capture_content():
                task = args.get("description")
                attributes["gen_ai.input.messages"] = _json(
                    [{"role": "user", "parts": [{"type": "text", "content": str(task)}]}]
                )
        else:
            span_name = f"execute_tool {name}"
            attributes |= {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.type": "function",
            }
            if tracing.capture_content():
                attributes["gen_ai.tool.call.arguments"] = _json(args)
        return span_name, attributes

    def _model_span(self, request: Any) -> tuple[str, dict[str, Any]]:
        name, static = self._model_attributes(request.model)
        attributes = {**static, **_conversation()}
        if tracing.capture_content():
            system = request.system_message
            if system is not None and system.text:
                attributes["gen_ai.system_instructions"] = _json(
                    [{"type": "text", "content": system.text}]
                )
            attributes["gen_ai.input.messages"] = _json(
                [_message_json(message) for message in request.messages]
            )
        return name, attributes

    def _model_attributes(self, model: Any) -> tuple[str, dict[str, Any]]:
        """The span name and the attributes every call of `model` has: what the model
        object says of itself (provider, model, parameters, endpoint) does not change."""
        kept = self._models.get(id(model))
        if kept is not None and kept[0] is model:
            return kept[1], kept[2]
        params = _ls_params(model)
        provider = str(params.get("ls_provider") or "unknown")
        name = str(params.get("ls_model_name") or "")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": PROVIDER_NAMES.get(provider, provider),
            "gen_ai.agent.name": self.agent,
        }
        if name:
            attributes["gen_ai.request.model"] = name
        for key, attribute, kind in (
            ("ls_temperature", "gen_ai.request.temperature", float),
            ("ls_max_tokens", "gen_ai.request.max_tokens", int),
        ):
            value = params.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                attributes[attribute] = kind(value)
        attributes.update(_endpoint(model))
        if len(self._models) >= _MODELS_KEPT:
            self._models.clear()
        span_name = f"chat {name}" if name else "chat"
        self._models[id(model)] = (model, span_name, attributes)
        return span_name, attributes


@contextmanager
def _span(
    tracer: Tracer, name: str, attributes: dict[str, Any], *, client: bool = False
) -> Iterator[Span]:
    """A span around a block, current inside it; an exception marks it failed, except
    langgraph's interrupts (an approval gate, a consent request), which pause the run."""
    from opentelemetry.trace import SpanKind, use_span

    kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
    span = tracer.start_span(name, kind=kind, attributes=attributes)
    with use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        try:
            yield span
        except GraphBubbleUp:
            raise
        except Exception as exc:
            # Its message only with content on: a tool's error may echo its arguments.
            tracing.record_exception(span, exc, message=tracing.capture_content())
            raise


def _safely(record: Callable[..., None], *args: Any) -> None:
    """`record(*args)`, which puts a result on a span; whatever fails there, the call's
    result goes back to the run as it is."""
    try:
        record(*args)
    except Exception:
        log.debug("a span missed its result", exc_info=True)


def _answered(span: Span, response: Any) -> None:
    """A model call's response on its span: model, tokens, finish reason (and content)."""
    message = ai_message(response)
    if message is None:
        return
    metadata = message.response_metadata if isinstance(message.response_metadata, dict) else {}
    model = metadata.get("model_name") or metadata.get("model")
    if isinstance(model, str) and model:
        span.set_attribute("gen_ai.response.model", model)
    response_id = metadata.get("id") or message.id
    if isinstance(response_id, str) and response_id and not response_id.startswith(("run-", "lc_")):
        span.set_attribute("gen_ai.response.id", response_id)
    usage = message.usage_metadata
    if usage:
        span.set_attribute("gen_ai.usage.input_tokens", int(usage.get("input_tokens") or 0))
        span.set_attribute("gen_ai.usage.output_tokens", int(usage.get("output_tokens") or 0))
        details: Mapping[str, Any] = usage.get("input_token_details") or {}
        cached = int(details.get("cache_read") or 0)
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", cached)
        if details.get("cache_creation"):
            span.set_attribute(
                "gen_ai.usage.cache_creation.input_tokens", int(details["cache_creation"])
            )
        reasoning = (usage.get("output_token_details") or {}).get("reasoning")
        if reasoning:
            span.set_attribute("gen_ai.usage.reasoning.output_tokens", int(reasoning))
    reason = finish_reason_of(message)
    if reason:
        span.set_attribute("gen_ai.response.finish_reasons", [reason])
    if tracing.capture_content():
        output = _message_json(message) | {"finish_reason": reason or "stop"}
        span.set_attribute("gen_ai.output.messages", _json([output]))


def _tool_answered(span: Span, result: Any, subagent: bool) -> None:
    """A tool's result on its span: a tool error marks it failed (and content, opted in)."""
    message = _tool_message_of(result)
    if message is None:
        return
    if message.status == "error":
        from opentelemetry.trace import StatusCode

        span.set_attribute("error.type", "tool_error")
        span.set_status(StatusCode.ERROR, "the tool answered an error")
    if tracing.capture_content():
        if subagent:
            parts = [{"type": "text", "content": message.text}]
            output = {"role": "assistant", "parts": parts, "finish_reason": "stop"}
            span.set_attribute("gen_ai.output.messages", _json([output]))
        else:
            span.set_attribute("gen_ai.tool.call.result", message.text)


def _tool_message_of(result: Any) -> ToolMessage | None:
    """The tool's message in what a tool call handler returned (a `Command`'s update too)."""
    if isinstance(result, ToolMessage):
        return result
    update = getattr(result, "update", None)
    messages = update.get("messages") if isinstance(update, Mapping) else None
    for message in reversed(messages or []):
        if isinstance(message, ToolMessage):
            return message
    return None


def _message_json(message: BaseMessage) -> dict[str, Any]:
    """A message as the conventions' JSON: `{"role", "parts": [...]}`."""
    parts: list[dict[str, Any]] = []
    if isinstance(message, ToolMessage):
        parts.append({"type": "tool_call_response", "id": message.tool_call_id,
                      "response": message.text})  # fmt: skip
    else:
        if message.text:
            parts.append({"type": "text", "content": message.text})
        for call in getattr(message, "tool_calls", None) or []:
            parts.append({"type": "tool_call", "id": call.get("id"), "name": call.get("name"),
                          "arguments": call.get("args")})  # fmt: skip
    return {"role": _ROLES.get(message.type, message.type), "parts": parts}


def _ls_params(model: Any) -> Mapping[str, Any]:
    """The model's provider and name as langchain reports them for tracing."""
    try:
        params = model._get_ls_params()
    except Exception:
        return {}
    return params if isinstance(params, Mapping) else {}


def _endpoint(model: Any) -> dict[str, Any]:
    """`server.address` and `server.port` of the endpoint the model calls, when it says."""
    for field in _ENDPOINT_FIELDS:
        url = getattr(model, field, None)
        found = tracing.server_address(url) if isinstance(url, str) and "://" in url else {}
        if found:
            return dict(found)
    return {}


def _conversation() -> dict[str, str]:
    """`gen_ai.conversation.id`: the run's thread."""
    thread = memory.configurable().get("thread_id")
    return {"gen_ai.conversation.id": str(thread)} if thread else {}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
