"""Ollama chat wire format (``POST /api/chat``): requests, answers, the NDJSON stream and errors.

Ollama streams unless the request says ``"stream": false``; tool call arguments are JSON objects,
not strings, and a streamed tool call comes whole in one line.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from agentctl.testing import wire
from agentctl.testing.script import Reply
from agentctl.testing.wire import Chat, WireError

__all__ = ["OllamaWire", "tags_body"]


class OllamaWire:
    """``POST /api/chat``."""

    stream_type = b"application/x-ndjson"

    def parse(self, request: Any) -> Chat:
        body = wire.expect_object(request)
        messages = [
            _message(index, message)
            for index, message in enumerate(wire.object_list(body.get("messages"), "messages"))
        ]
        return Chat(
            messages,
            wire.optional_list(body, "tools"),
            wire.model_name(body),
            body.get("stream") is not False,
        )

    def usage(self, reply: Reply, chat: Chat) -> wire.Usage:
        return wire.usage_of(chat, reply, cache=False)  # Ollama reports no cache

    def body(self, reply: Reply, chat: Chat, model: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = _tool_calls(reply)
        return {**_head(model), "message": message, **_done(chat, reply)}

    def stream(self, reply: Reply, chat: Chat, model: str) -> list[bytes]:
        """One JSON line per word (or one with the tool calls), then a ``done`` line."""
        head = _head(model)
        messages: list[dict[str, Any]] = [
            {"role": "assistant", "content": piece} for piece in wire.words(reply.content)
        ]
        if reply.tool_calls:
            messages.append({"role": "assistant", "content": "", "tool_calls": _tool_calls(reply)})
        lines = [{**head, "message": message, "done": False} for message in messages]
        lines.append(
            {**head, "message": {"role": "assistant", "content": ""}, **_done(chat, reply)}
        )
        return [orjson.dumps(line) + b"\n" for line in lines]

    def error(self, status: int, message: str, code: str) -> dict[str, Any]:
        return {"error": message}


def tags_body(model: str) -> dict[str, Any]:
    """``GET /api/tags`` body listing the one scripted model."""
    return {"models": [{"name": model, "model": model, "size": 0, "details": {}}]}


def _message(index: int, message: dict[str, Any]) -> dict[str, Any]:
    """One Ollama message in the OpenAI shape (tool call arguments as JSON text)."""
    if not isinstance(message.get("role"), str):
        raise WireError(f"'messages.{index}.role' must be a string")
    calls = message.get("tool_calls")
    if not calls:
        return message
    converted = []
    for call in wire.object_list(calls, f"messages.{index}.tool_calls"):
        function = call.get("function")
        if not isinstance(function, dict):
            raise WireError(f"'messages.{index}.tool_calls' need a 'function' object each")
        arguments = orjson.dumps(function.get("arguments") or {}).decode()
        converted.append({"function": {"name": function.get("name"), "arguments": arguments}})
    return {**message, "tool_calls": converted}


def _tool_calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id,
            "function": {
                "index": index,
                "name": call.name,
                "arguments": orjson.loads(call.arguments),
            },
        }
        for index, call in enumerate(reply.tool_calls)
    ]


def _head(model: str) -> dict[str, Any]:
    return {"model": model, "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z")}


def _done(chat: Chat, reply: Reply) -> dict[str, Any]:
    prompt, completion = wire.token_counts(chat, reply)
    return {
        "done": True,
        "done_reason": "stop",
        "total_duration": 0,
        "load_duration": 0,
        "prompt_eval_count": prompt,
        "prompt_eval_duration": 0,
        "eval_count": completion,
        "eval_duration": 0,
    }
