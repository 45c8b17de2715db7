"""OpenAI Chat Completions wire format: response bodies, stream chunks, usage and errors."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from agentctl.testing.script import Reply, message_text

__all__ = [
    "completion_body",
    "error_body",
    "error_type",
    "estimate_tokens",
    "models_body",
    "stream_events",
    "usage",
]

DONE_EVENT = b"data: [DONE]\n\n"
_PIECE = re.compile(r"\S+\s*|\s+")
_ARGUMENT_PIECES = 4


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate: about four characters per token."""
    return (len(text) + 3) // 4


def usage(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Any], reply: Reply
) -> dict[str, Any]:
    """OpenAI ``usage`` object estimated from the request and the reply."""
    prompt = estimate_tokens(orjson.dumps(tools).decode()) if tools else 0
    for message in messages:
        prompt += 4 + estimate_tokens(message_text(message.get("content")))
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                prompt += estimate_tokens(
                    f"{function.get('name', '')}{function.get('arguments', '')}"
                )
    completion = estimate_tokens(reply.content) + sum(
        1 + estimate_tokens(call.name + call.arguments) for call in reply.tool_calls
    )
    completion = max(completion, 1)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def _tool_calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
        for call in reply.tool_calls
    ]


def completion_body(
    reply: Reply, *, completion_id: str, model: str, created: int, usage: dict[str, Any]
) -> dict[str, Any]:
    """Non-streaming ``chat.completion`` object."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": None if reply.tool_calls else reply.content,
        "refusal": None,
        "annotations": [],
    }
    if reply.tool_calls:
        message["tool_calls"] = _tool_calls(reply)
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": usage,
        "service_tier": "default",
        "system_fingerprint": None,
    }


def _split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _deltas(reply: Reply) -> list[dict[str, Any]]:
    if not reply.tool_calls:
        return [{"content": piece} for piece in _PIECE.findall(reply.content)]
    deltas: list[dict[str, Any]] = []
    for index, call in enumerate(reply.tool_calls):
        head = {"name": call.name, "arguments": ""}
        deltas.append(
            {"tool_calls": [{"index": index, "id": call.id, "type": "function", "function": head}]}
        )
        deltas.extend(
            {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            for piece in _split(call.arguments, _ARGUMENT_PIECES)
        )
    return deltas


def stream_events(
    reply: Reply,
    *,
    completion_id: str,
    model: str,
    created: int,
    usage: dict[str, Any] | None,
) -> list[bytes]:
    """Server-sent events of a streamed completion, ending with ``data: [DONE]``.

    With ``usage`` (``stream_options.include_usage``), every chunk carries ``"usage": null`` and
    a last chunk with empty ``choices`` carries the usage.
    """
    head: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "system_fingerprint": None,
    }
    extra: dict[str, Any] = {"usage": None} if usage is not None else {}

    def event(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return b"data: " + orjson.dumps({**head, "choices": [choice], **extra}) + b"\n\n"

    first: dict[str, Any] = {"role": "assistant", "content": None if reply.tool_calls else ""}
    events = [event(first)]
    events.extend(event(delta) for delta in _deltas(reply))
    events.append(event({}, reply.finish_reason))
    if usage is not None:
        events.append(b"data: " + orjson.dumps({**head, "choices": [], "usage": usage}) + b"\n\n")
    events.append(DONE_EVENT)
    return events


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
