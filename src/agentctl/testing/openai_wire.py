"""OpenAI Chat Completions wire format: requests, response bodies, stream chunks and errors."""

from __future__ import annotations

import time
import uuid
from typing import Any

import orjson

from agentctl.testing import wire
from agentctl.testing.script import Reply
from agentctl.testing.wire import Chat

__all__ = [
    "OpenAIWire",
    "error_body",
    "error_type",
    "model_object",
    "models_body",
]

DONE_EVENT = b"data: [DONE]\n\n"
_ARGUMENT_PIECES = 4


class OpenAIWire:
    """``POST /v1/chat/completions``."""

    stream_type = b"text/event-stream; charset=utf-8"

    def parse(self, request: Any) -> Chat:
        body = wire.expect_object(request)
        messages = wire.object_list(body.get("messages"), "messages")
        tools = wire.optional_list(body, "tools")
        options = body.get("stream_options")
        return Chat(
            messages,
            tools,
            wire.model_name(body),
            stream=body.get("stream") is True,
            include_usage=isinstance(options, dict) and bool(options.get("include_usage")),
        )

    def usage(self, reply: Reply, chat: Chat) -> wire.Usage | None:
        return wire.usage_of(chat, reply) if not chat.stream or chat.include_usage else None

    def body(self, reply: Reply, chat: Chat, model: str) -> dict[str, Any]:
        """Non-streaming ``chat.completion`` object."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None if reply.tool_calls else reply.content,
            "refusal": None,
            "annotations": [],
        }
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in reply.tool_calls
            ]
        choice = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": reply.finish_reason,
        }
        return {
            **_head(model, "chat.completion"),
            "choices": [choice],
            "usage": usage(chat, reply),
            "service_tier": "default",
        }

    def stream(self, reply: Reply, chat: Chat, model: str) -> list[bytes]:
        """Server-sent events of a streamed completion, ending with ``data: [DONE]``.

        With ``stream_options.include_usage``, every chunk carries ``"usage": null`` and a last
        chunk with empty ``choices`` carries the usage.
        """
        head = _head(model, "chat.completion.chunk")
        extra: dict[str, Any] = {"usage": None} if chat.include_usage else {}

        def event(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            return b"data: " + orjson.dumps({**head, "choices": [choice], **extra}) + b"\n\n"

        first: dict[str, Any] = {"role": "assistant", "content": None if reply.tool_calls else ""}
        events = [event(first)]
        events.extend(event(delta) for delta in _deltas(reply))
        events.append(event({}, reply.finish_reason))
        if chat.include_usage:
            last = {**head, "choices": [], "usage": usage(chat, reply)}
            events.append(b"data: " + orjson.dumps(last) + b"\n\n")
        events.append(DONE_EVENT)
        return events

    def error(self, status: int, message: str, code: str) -> dict[str, Any]:
        return error_body(status, message, code)


def _head(model: str, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": kind,
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": None,
    }


def usage(chat: Chat, reply: Reply) -> dict[str, Any]:
    """OpenAI ``usage`` object estimated from the request and the reply (``prompt_tokens``
    include the ``cached_tokens``)."""
    counted = wire.usage_of(chat, reply)
    return {
        "prompt_tokens": counted.input,
        "completion_tokens": counted.output,
        "total_tokens": counted.total,
        "prompt_tokens_details": {"cached_tokens": counted.cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def _deltas(reply: Reply) -> list[dict[str, Any]]:
    if not reply.tool_calls:
        return [{"content": piece} for piece in wire.words(reply.content)]
    deltas: list[dict[str, Any]] = []
    for index, call in enumerate(reply.tool_calls):
        head = {"name": call.name, "arguments": ""}
        deltas.append(
            {"tool_calls": [{"index": index, "id": call.id, "type": "function", "function": head}]}
        )
        deltas.extend(
            {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            for piece in wire.split(call.arguments, _ARGUMENT_PIECES)
        )
    return deltas


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


def error_type(status: int) -> str:
    """OpenAI error ``type`` for an HTTP status."""
    return _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")


def error_body(status: int, message: str, code: str | None) -> dict[str, Any]:
    """OpenAI-style error body ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": error_type(status), "param": None, "code": code}}


def models_body(model: str) -> dict[str, Any]:
    """``GET /v1/models`` body listing the one scripted model."""
    return {"object": "list", "data": [model_object(model)]}


def model_object(model: str) -> dict[str, Any]:
    """One OpenAI ``model`` object."""
    return {"id": model, "object": "model", "created": 0, "owned_by": "agentctl"}
