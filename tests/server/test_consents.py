"""A run stopped for the user to connect their account to an MCP server, as A2A and the MCP
endpoint tell it: an `auth-required` task, a tool error; both name the server and the link.
Fed with the interrupts as a thread holds them (the consent interrupt's value, by contract)."""

from __future__ import annotations

from typing import Any

import mcp.types as types
from a2a.helpers import get_data_parts, get_text_parts
from a2a.types import TaskState

from agentctl.server.a2a.waiting import describe, waiting_parts, waiting_state
from agentctl.server.consents import connection_requests
from agentctl.server.routes.mcp import connection_result

URL = "https://agent.example.com/ui/#/connect/f-123"
CONSENT: dict[str, Any] = {
    "type": "connection_required",
    "server": "notes",
    "description": "Your notes in Example Notes",
    "flow_id": "f-123",
    "authorization_url": URL,
    "expires_at": "2026-11-27T13:00:00+00:00",
    "message": f"To use notes, connect your account: open {URL}",
}
APPROVAL: dict[str, Any] = {
    "action_requests": [{"name": "write_file", "args": {"file_path": "/a.md"}}],
    "review_configs": [{"action_name": "write_file", "allowed_decisions": ["approve"]}],
}


def tool_result(result: types.ServerResult | None) -> types.CallToolResult:
    assert result is not None
    assert isinstance(result.root, types.CallToolResult)
    return result.root


def interrupts(*values: Any) -> list[dict[str, Any]]:
    return [{"value": value, "id": f"i-{n}"} for n, value in enumerate(values)]


def test_a_consent_request_is_auth_required_an_approval_input_required() -> None:
    assert waiting_state(interrupts(CONSENT)) == TaskState.TASK_STATE_AUTH_REQUIRED
    assert waiting_state(interrupts(APPROVAL)) == TaskState.TASK_STATE_INPUT_REQUIRED
    assert waiting_state(interrupts("a question?")) == TaskState.TASK_STATE_INPUT_REQUIRED
    assert waiting_state(interrupts(APPROVAL, CONSENT)) == TaskState.TASK_STATE_AUTH_REQUIRED
    # Only the contract's shape counts: a type without a link is another question.
    assert connection_requests([{"type": "connection_required"}, CONSENT, "x"]) == [CONSENT]


def test_the_status_message_names_the_server_and_the_link() -> None:
    pending = interrupts(CONSENT)
    parts = waiting_parts(pending)
    [text] = get_text_parts(parts)
    assert text == describe(pending)
    assert text.splitlines() == [
        "To use notes (Your notes in Example Notes), the user must connect their own notes "
        f"account: open {URL} (the link works until 2026-11-27T13:00:00+00:00).",
        "Once connected, the task goes on by itself (get the task to follow it); a reply to "
        "the task goes on at once instead, without notes if still not connected.",
    ]
    assert get_data_parts(parts) == [{"interrupts": pending}]
    # An approval gate is described as before.
    assert describe(interrupts(APPROVAL)).startswith('Approve write_file {"file_path": "/a.md"}?')


def test_an_mcp_call_stopped_for_a_connection_is_a_tool_error_with_the_link() -> None:
    facts = {"thread_id": "t-1", "run_id": "r-1"}
    call = tool_result(connection_result([CONSENT], facts))
    assert call.isError
    [content] = call.content
    assert isinstance(content, types.TextContent)
    assert content.text == (
        "The agent cannot go on until the user connects: To use notes (Your notes in Example "
        f"Notes), the user must connect their own notes account: open {URL} (the link works "
        "until 2026-11-27T13:00:00+00:00). Once connected, call this tool again with "
        "thread_id t-1 to go on."
    )
    assert call.structuredContent == {
        **facts,
        "status": "connection_required",
        "server": "notes",
        "authorization_url": URL,
    }
    stateless = tool_result(connection_result([CONSENT], {"thread_id": None, "run_id": "r-2"}))
    [content] = stateless.content
    assert isinstance(content, types.TextContent)
    assert content.text.endswith("Once connected, call this tool again to go on.")
    assert connection_result([APPROVAL], facts) is None  # an approval gate: as before
