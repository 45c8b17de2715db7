"""Anthropic Messages wire format (``POST /v1/messages``): requests with content blocks, message
bodies, the server-sent event stream and errors.

A request's ``system`` becomes a system message, ``tool_use`` blocks become tool calls and each
``tool_result`` block of a user message becomes a ``tool`` message, so the script reads an
Anthropic conversation as it reads an OpenAI one.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from agentctl.testing import wire
from agentctl.testing.script import Reply, message_text
from agentctl.testing.wire import Chat, WireError

__all__ = ["AnthropicWire", "count_tokens_body"]

_ARGUMENT_PIECES = 4
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


class AnthropicWire:
    """``POST /v1/messages``."""

    stream_type = b"text/event-stream; charset=utf-8"

    def parse(self, request: Any) -> Chat:
        body = wire.expect_object(request)
        messages: list[dict[str, Any]] = []
        system = body.get("system")
        if system is not None:
            if not isinstance(system, str | list):
                raise WireError("'system' must be a string or a list of text blocks")
            messages.append({"role": "system", "content": system})
        for index, message in enumerate(wire.object_list(body.get("messages"), "messages")):
            messages.extend(_messages(index, message))
        return Chat(
            messages,
            wire.optional_list(body, "tools"),
            wire.model_name(body),
            body.get("stream") is True,
        )

    def usage(self, reply: Reply, chat: Chat) -> wire.Usage:
        return wire.usage_of(chat, reply)

    def body(self, reply: Reply, chat: Chat, model: str) -> dict[str, Any]:
        return {
            **_message(model),
            "content": _blocks(reply),
            "stop_reason": _stop_reason(reply),
            "usage": _usage(wire.usage_of(chat, reply)),
        }

    def stream(self, reply: Reply, chat: Chat, model: str) -> list[bytes]:
        """``message_start``, then per block ``content_block_start``, deltas and
        ``content_block_stop``, then ``message_delta`` (stop reason, usage) and
        ``message_stop``."""
        counted = wire.usage_of(chat, reply)
        first = _usage(wire.Usage(counted.input, 1, counted.cached))
        start = {**_message(model), "content": [], "stop_reason": None, "usage": first}
        events = [_event("message_start", {"message": start}), _event("ping", {})]
        for index, block in enumerate(_blocks(reply)):
            if block["type"] == "text":
                head: dict[str, Any] = {"type": "text", "text": ""}
                deltas = [
                    {"type": "text_delta", "text": piece} for piece in wire.words(block["text"])
                ]
            else:
                head = {**block, "input": {}}
                arguments = orjson.dumps(block["input"]).decode()
                deltas = [
                    {"type": "input_json_delta", "partial_json": piece}
                    for piece in wire.split(arguments, _ARGUMENT_PIECES)
                ]
            events.append(_event("content_block_start", {"index": index, "content_block": head}))
            events.extend(
                _event("content_block_delta", {"index": index, "delta": delta}) for delta in deltas
            )
            events.append(_event("content_block_stop", {"index": index}))
        stop = {"stop_reason": _stop_reason(reply), "stop_sequence": None}
        # As the API does: the message's usage so far, cumulative (langchain reads this one).
        events.append(_event("message_delta", {"delta": stop, "usage": _usage(counted)}))
        events.append(_event("message_stop", {}))
        return events

    def error(self, status: int, message: str, code: str) -> dict[str, Any]:
        kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}


def count_tokens_body(chat: Chat) -> dict[str, Any]:
    """``POST /v1/messages/count_tokens`` body: the estimated input tokens."""
    return {"input_tokens": wire.token_counts(chat, Reply())[0]}


def _messages(index: int, message: dict[str, Any]) -> list[dict[str, Any]]:
    """One Anthropic message as OpenAI-shaped messages."""
    role, content = message.get("role"), message.get("content")
    if role not in ("user", "assistant"):
        raise WireError(f"'messages.{index}.role' must be 'user' or 'assistant'")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    blocks = wire.object_list(content, f"messages.{index}.content")
    if role == "assistant":
        calls = [
            {
                "id": block.get("id"),
                "type": "function",
                "function": {
                    "name": block.get("name"),
                    "arguments": orjson.dumps(block.get("input") or {}).decode(),
                },
            }
            for block in blocks
            if block.get("type") == "tool_use"
        ]
        text = [block for block in blocks if block.get("type") == "text"]
        return [{"role": "assistant", "content": text} | ({"tool_calls": calls} if calls else {})]
    results = [block for block in blocks if block.get("type") == "tool_result"]
    converted = [
        {
            "role": "tool",
            "tool_call_id": block.get("tool_use_id"),
            "content": message_text(block.get("content")),
        }
        for block in results
    ]
    rest = [block for block in blocks if block.get("type") != "tool_result"]
    if rest or not results:  # text beside tool results is the user's next turn
        converted.append({"role": "user", "content": rest})
    return converted


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.content or not reply.tool_calls:
        blocks.append({"type": "text", "text": reply.content})
    blocks.extend(
        {
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": orjson.loads(call.arguments),
        }
        for call in reply.tool_calls
    )
    return blocks


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.tool_calls else "end_turn"


def _message(model: str) -> dict[str, Any]:
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "stop_sequence": None,
    }


def _usage(counted: wire.Usage) -> dict[str, Any]:
    """Anthropic's ``usage``: its ``input_tokens`` are those not read from the cache."""
    return {
        "input_tokens": counted.input - counted.cached,
        "output_tokens": counted.output,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": counted.cached,
    }


def _event(kind: str, data: dict[str, Any]) -> bytes:
    payload = orjson.dumps({"type": kind, **data})
    return b"event: " + kind.encode() + b"\ndata: " + payload + b"\n\n"
