"""Chat-model messages as the protocol's `messages` channel shows them.

A run streams messages as langchain chunks (`[chunk, metadata]` in the event log). The
protocol shows each message as `message-start`, then content blocks (`content-block-start`,
`-delta`, `-finish`, one wire index per block) and `message-finish`. Chunks of one message
share its id; the last carries `chunk_position: "last"`. A message returned whole by a node
(never streamed) is shown as one burst of the same events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

Data = dict[str, Any]

_ROLES = {"ai": "ai", "AIMessageChunk": "ai", "human": "human", "system": "system"}
# Facts of the message and of the call that made it, shown on `message-start`.
_START_FACTS = {
    "model_provider": "provider",
    "model_name": "model",
    "system_fingerprint": "system_fingerprint",
    "service_tier": "service_tier",
}


@dataclass
class _Block:
    index: int
    kind: str  # "text" | "reasoning" | "tool"
    text: str = ""
    tool_id: str | None = None
    tool_name: str | None = None

    def finished(self) -> Data:
        if self.kind == "text":
            return {"type": "text", "text": self.text}
        if self.kind == "reasoning":
            return {"type": "reasoning", "reasoning": self.text}
        try:
            args = orjson.loads(self.text) if self.text else {}
        except orjson.JSONDecodeError:
            args = None
        if not isinstance(args, dict):
            return {
                "type": "invalid_tool_call",
                "id": self.tool_id,
                "name": self.tool_name,
                "args": self.text,
                "error": "the arguments are not a JSON object",
            }
        return {"type": "tool_call", "id": self.tool_id, "name": self.tool_name or "", "args": args}


@dataclass
class OpenMessage:
    """A message whose chunks are still coming."""

    namespace: list[str]
    blocks: dict[Any, _Block] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)

    def block(self, key: Any, kind: str, start: Data, out: list[Data]) -> _Block:
        block = self.blocks.get(key)
        if block is None:
            block = self.blocks[key] = _Block(len(self.blocks), kind)
            out.append({"event": "content-block-start", "index": block.index, "content": start})
        return block

    def add(self, chunk: Data, out: list[Data]) -> None:
        for key, kind, text in _content_parts(chunk.get("content")):
            start = {"type": kind, kind: ""}
            block = self.block(key, kind, start, out)
            block.text += text
            delta = {"type": f"{kind}-delta", kind: text}
            out.append({"event": "content-block-delta", "index": block.index, "delta": delta})
        for part in chunk.get("tool_call_chunks") or ():
            key = (
                "tool",
                part.get("index"),
                None if part.get("index") is not None else part.get("id"),
            )
            start = {
                "type": "tool_call_chunk",
                "id": part.get("id"),
                "name": part.get("name"),
                "args": "",
            }
            block = self.block(key, "tool", start, out)
            block.tool_id = block.tool_id or part.get("id")
            block.tool_name = block.tool_name or part.get("name")
            if part.get("args"):
                block.text += part["args"]
                delta = {"type": "tool-call-delta", "args": part["args"]}
                out.append({"event": "content-block-delta", "index": block.index, "delta": delta})
        for name, value in (chunk.get("usage_metadata") or {}).items():
            if isinstance(value, int):
                self.usage[name] = self.usage.get(name, 0) + value

    def finish(self) -> list[Data]:
        out: list[Data] = [
            {"event": "content-block-finish", "index": block.index, "content": block.finished()}
            for block in self.blocks.values()
        ]
        finish: Data = {"event": "message-finish"}
        if self.usage:
            finish["usage"] = self.usage
        out.append(finish)
        return out


def _content_parts(content: Any) -> list[tuple[Any, str, str]]:
    """(block key, "text" | "reasoning", text) for each piece of text in `content`."""
    if isinstance(content, str):
        return [("text", "text", content)] if content else []
    parts: list[tuple[Any, str, str]] = []
    for position, item in enumerate(content or ()):
        if isinstance(item, str):
            parts.append(("text", "text", item))
        elif isinstance(item, dict) and item.get("type") in ("text", "reasoning"):
            kind = item["type"]
            text = item.get(kind) or ""
            if text:
                parts.append(((kind, item.get("index", position)), kind, text))
    return parts


def message_start(message: Data, metadata: Data, role: str) -> Data:
    facts: Data = {}
    for source, name in _START_FACTS.items():
        value = (message.get("response_metadata") or {}).get(source)
        if isinstance(value, str):
            facts[name] = value
    for name in ("langgraph_node", "lc_agent_name"):
        if isinstance(metadata.get(name), str):
            facts[name] = metadata[name]
    start: Data = {"event": "message-start", "role": role, "id": message.get("id") or ""}
    if facts:
        start["metadata"] = facts
    return start


class MessageStreams:
    """The messages of one run being streamed, by id."""

    def __init__(self) -> None:
        self.open: dict[str, OpenMessage] = {}

    def feed(self, namespace: list[str], message: Data, metadata: Data) -> list[Data]:
        """The protocol events for one streamed `message` (a chunk or a whole message)."""
        kind = str(message.get("type") or "")
        role = _ROLES.get(kind)
        if role is None:  # tool results: the `tools` channel carries them
            return []
        message_id = str(message.get("id") or "")
        if not kind.endswith("Chunk"):
            if message_id in self.open:  # the whole message after its chunks
                return self.finish(message_id)
            return _whole(namespace, message, metadata, role)
        out: list[Data] = []
        current = self.open.get(message_id)
        if current is None:
            current = self.open[message_id] = OpenMessage(namespace)
            out.append(message_start(message, metadata, role))
        current.add(message, out)
        if message.get("chunk_position") == "last":
            out.extend(self.finish(message_id))
        return out

    def finish(self, message_id: str) -> list[Data]:
        current = self.open.pop(message_id, None)
        return current.finish() if current is not None else []

    def fail(self, message: str, code: str | None) -> list[tuple[list[str], Data]]:
        """End every message still open with an `error` event (the run failed or was
        cancelled mid-message): (namespace, event) pairs."""
        error: Data = {"event": "error", "message": message}
        if code is not None:
            error["code"] = code
        out = [(current.namespace, dict(error)) for current in self.open.values()]
        self.open.clear()
        return out

    def finish_under(self, prefix: tuple[str, ...]) -> list[tuple[list[str], Data]]:
        """Finish the messages still open in `prefix` or below it (their node has ended):
        (namespace, event) pairs."""
        out: list[tuple[list[str], Data]] = []
        for message_id, current in list(self.open.items()):
            if tuple(current.namespace[: len(prefix)]) == prefix:
                out.extend((current.namespace, event) for event in self.finish(message_id))
        return out


def _whole(namespace: list[str], message: Data, metadata: Data, role: str) -> list[Data]:
    current = OpenMessage(namespace)
    out = [message_start(message, metadata, role)]
    current.add(message, out)
    for position, call in enumerate(message.get("tool_calls") or ()):
        start = {
            "type": "tool_call_chunk",
            "id": call.get("id"),
            "name": call.get("name"),
            "args": "",
        }
        block = current.block(("tool", position), "tool", start, out)
        block.tool_id, block.tool_name = call.get("id"), call.get("name")
        block.text = orjson.dumps(call.get("args") or {}).decode()
    out.extend(current.finish())
    return out


def tool_result_message(data: Data) -> tuple[str, list[Data]] | None:
    """A finished tool call's result as a `tool` message: (the tool call id, its events)."""
    output = data.get("output")
    tool_call_id = data.get("tool_call_id")
    if not isinstance(tool_call_id, str):
        return None
    content = output.get("content") if isinstance(output, dict) else output
    text = content if isinstance(content, str) else orjson.dumps(content).decode()
    message_id = output.get("id") if isinstance(output, dict) else None
    block = {"type": "text", "text": text}
    return tool_call_id, [
        {
            "event": "message-start",
            "role": "tool",
            "id": message_id or f"tool-{tool_call_id}",
            "tool_call_id": tool_call_id,
        },
        {"event": "content-block-start", "index": 0, "content": {"type": "text", "text": ""}},
        {"event": "content-block-delta", "index": 0, "delta": {"type": "text-delta", "text": text}},
        {"event": "content-block-finish", "index": 0, "content": block},
        {"event": "message-finish"},
    ]
