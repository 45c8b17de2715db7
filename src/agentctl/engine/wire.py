"""Turning what a langgraph run streams into the LangGraph API's events."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from agentctl import serde

log = logging.getLogger("agentctl.engine")

# Stream modes a client may ask for, and the langgraph mode that produces each.
STREAM_MODES = {
    "values": "values",
    "updates": "updates",
    "debug": "debug",
    "messages": "messages",
    "messages-tuple": "messages",
    "custom": "custom",
    "tasks": "tasks",
    "checkpoints": "checkpoints",
    "tools": "tools",  # tool calls starting and finishing (`tool-started`, `tool-finished`, …)
    "events": None,  # from astream_events, not a langgraph stream mode
}
# What a run started through the thread stream protocol streams: everything its channels show.
PROTOCOL_MODES = ["values", "updates", "messages-tuple", "custom", "tools", "tasks", "checkpoints"]
# A run's option (set by the server, never by a client): its input answers the interrupt
# waiting on the thread when it starts, if one waits.
ANSWERS_INTERRUPT = "answers_interrupt"
END_EVENT = "__end__"  # in the log only: marks the end of a run's events
TOO_LARGE = "EventTooLarge"  # the error an event over the size limit is replaced with
MIB = 1024 * 1024


def normalize_modes(stream_mode: str | Sequence[str] | None) -> list[str]:
    if stream_mode is None:
        return ["values"]
    modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
    return list(dict.fromkeys(modes)) or ["values"]


def langgraph_modes(modes: Sequence[str]) -> list[str]:
    """The langgraph modes to stream; `updates` is always there to see interrupts."""
    wanted = {mode for m in modes if (mode := STREAM_MODES[m]) is not None}
    return sorted(wanted | {"updates"})


def event_name(mode: str, namespace: Sequence[str]) -> str:
    return "|".join([mode, *namespace]) if namespace else mode


class MessageAccumulator:
    """The legacy `messages` mode: whole messages so far, keyed by message id."""

    def __init__(self) -> None:
        self.seen: dict[str, Any] = {}

    def add(self, chunk: Any, metadata: dict[str, Any]) -> list[tuple[str, Any]]:
        message_id = getattr(chunk, "id", None) or ""
        events: list[tuple[str, Any]] = []
        if message_id not in self.seen:
            events.append(("messages/metadata", {message_id: {"metadata": metadata}}))
            self.seen[message_id] = chunk
        else:
            try:
                self.seen[message_id] = self.seen[message_id] + chunk
            except TypeError:
                self.seen[message_id] = chunk
        is_chunk = type(chunk).__name__.endswith("Chunk")
        name = "messages/partial" if is_chunk else "messages/complete"
        events.append((name, [self.seen[message_id]]))
        return events


def within(run_id: str, event: str, data: bytes, max_bytes: int | None) -> bytes:
    """`data`, or, when it is over `max_bytes`, what stands for it in the log and on the
    wire, under the same event name and in its mode's shape (docs/server.md, Limits):
    `{"__error__": {"error": "EventTooLarge", "message"}}`, as an empty AI message's
    `response_metadata` in message events (`[chunk, metadata]`, or a list of messages)."""
    if max_bytes is None or len(data) <= max_bytes:
        return data
    size, most = len(data) / MIB, max_bytes / MIB
    log.warning("run %s: a %s event of %.1f MiB was left out, over AGENTCTL_MAX_EVENT_MB (%g)",
                run_id, event, size, most)  # fmt: skip
    message = (
        f"this {event} event was {size:.1f} MiB, more than the {most:g} MiB an event may "
        "hold (AGENTCTL_MAX_EVENT_MB on the server), so it was left out; the thread's state "
        "(GET /threads/{thread_id}/state) has the run's values"
    )
    error = {"__error__": {"error": TOO_LARGE, "message": message}}
    mode = event.split("|", 1)[0]
    if mode == "messages":
        return serde.dumps(
            [{"type": "AIMessageChunk", "content": "", "response_metadata": error}, {}]
        )
    if mode in ("messages/partial", "messages/complete"):
        return serde.dumps([{"type": "ai", "content": "", "response_metadata": error}])
    return serde.dumps(error)
