"""What a task shows while its run waits at interrupts: `auth-required` when one of them asks
the user to connect their account to an MCP server (`server/consents.py`), else
`input-required` (an approval gate, or another question); and a status message describing
what is awaited, in words and as a data part (`{"interrupts": [...]}`)."""

from __future__ import annotations

import json
from typing import Any

from a2a.helpers import new_data_part, new_text_part
from a2a.types import Part, TaskState

from agentctl.server.consents import ask_to_connect, is_connection_request
from agentctl.storage.base import Thread

AFTER_CONNECTING = (
    "Once connected, the task goes on by itself (get the task to follow it); a reply to "
    "the task goes on at once instead, without {servers} if still not connected."
)
HOW_TO_APPROVE = (
    'Reply "approve", or "reject: <reason>", or send a data part {"decisions": '
    "[...]} with one decision per action (approve, edit or reject)."
)


def pending_interrupts(thread: Thread | None) -> list[dict[str, Any]]:
    """The interrupts the thread waits at, `{"value", "id"}` each."""
    return [i for pending in (thread.interrupts if thread else {}).values() for i in pending]


def is_approval(interrupt: dict[str, Any]) -> bool:
    """Whether `interrupt` is an approval gate's (the human-in-the-loop middleware's)."""
    value = interrupt.get("value")
    return isinstance(value, dict) and isinstance(value.get("action_requests"), list)


def is_connection(interrupt: dict[str, Any]) -> bool:
    """Whether `interrupt` asks the user to connect their account to an MCP server."""
    return is_connection_request(interrupt.get("value"))


def waiting_state(interrupts: list[dict[str, Any]]) -> TaskState:
    """The state of a task whose run waits at `interrupts` (`{"value", "id"}` each)."""
    if any(is_connection(i) for i in interrupts):
        return TaskState.TASK_STATE_AUTH_REQUIRED
    return TaskState.TASK_STATE_INPUT_REQUIRED


def waiting_parts(interrupts: list[dict[str, Any]]) -> list[Part]:
    """The status message's parts: what is awaited in words, and the interrupts as data."""
    return [new_text_part(describe(interrupts)), new_data_part({"interrupts": interrupts})]


def describe(interrupts: list[dict[str, Any]]) -> str:
    """What the agent waits for, and how to answer, in words."""
    lines: list[str] = []
    for interrupt in interrupts:
        if is_connection(interrupt):
            lines.append(ask_to_connect(interrupt["value"]))
        elif is_approval(interrupt):
            for request in interrupt["value"]["action_requests"]:
                args = json.dumps(request.get("args") or {}, ensure_ascii=False)
                lines.append(f"Approve {request.get('name')} {args}?")
        else:
            value = interrupt.get("value")
            lines.append(value if isinstance(value, str) else json.dumps(value))
    if all(is_connection(i) for i in interrupts):
        servers = dict.fromkeys(str(i["value"].get("server")) for i in interrupts)
        lines.append(AFTER_CONNECTING.format(servers=" or ".join(servers)))
    elif all(is_approval(i) for i in interrupts):
        lines.append(HOW_TO_APPROVE)
    return "\n".join(lines)
