"""A2A and the MCP endpoint when a run stops for the user to connect their account to a
user-owned MCP server, end to end: the loopback OAuth provider and its notes server, the
official a2a-sdk (1.x, and 0.3's JSON-RPC) and mcp clients, a browser played by httpx."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.helpers import get_data_parts, get_message_text
from a2a.types import GetTaskRequest, Task

from agentctl.testing.identity import IdpBServer
from agentctl.testing.oauth_provider import running_oauth_provider
from tests.conftest import eventually
from tests.server.conftest import running_server
from tests.server.test_a2a import a2a_client, answer, message, rpc, send, state
from tests.server.test_mcp import mcp_session, text_of
from tests.server.test_user_connections import WHOAMI, Notes, idle_answer, notes_project


@pytest.fixture
async def notes(tmp_path: Path, idp_b: IdpBServer) -> AsyncIterator[Notes]:
    """The notes agent of `test_user_connections`, with its OAuth provider."""
    async with running_oauth_provider() as provider:
        root = notes_project(tmp_path / "notes-agent", provider, idp_b)
        async with running_server(root, tmp_path / "data") as running, AsyncExitStack() as stack:
            yield Notes(running, provider, idp_b, stack)


def bearer(notes: Notes, name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {notes.token(name)}"}


def consent_of(task: Task) -> dict[str, Any]:
    """The consent request an auth-required task's status message carries as data."""
    [data] = get_data_parts(task.status.message.parts)
    [interrupt] = data["interrupts"]
    value: dict[str, Any] = interrupt["value"]
    assert value["type"] == "connection_required"
    return value


async def test_a2a_task_is_auth_required_then_follows_the_resumed_run(notes: Notes) -> None:
    await notes.connect("alice")  # the catalog exists: whoami is offered
    async with a2a_client(notes.running, "notes-agent", headers=bearer(notes, "carol")) as client:
        waiting = await send(client, message(WHOAMI))
        assert state(waiting) == "TASK_STATE_AUTH_REQUIRED"
        url = consent_of(waiting)["authorization_url"]
        text = get_message_text(waiting.status.message)
        assert text.startswith("To use notes (Your notes in Loopback Notes), the user must ")
        assert f"open {url} " in text
        assert "goes on by itself" in text
        assert (await notes.consent(url, "carol")).status_code == 200

        async def completed() -> Task | None:
            got = await client.get_task(GetTaskRequest(id=waiting.id))
            return got if state(got) == "TASK_STATE_COMPLETED" else None

        done = await eventually(completed, seconds=20, what="the task to complete")
        assert done.metadata["runId"] != waiting.metadata["runId"]  # the resuming run
    carol = notes.client("carol")
    assert await idle_answer(carol, waiting.context_id) == "I am carol"


async def test_a_reply_to_an_auth_required_task_goes_on_without_the_account(
    notes: Notes,
) -> None:
    await notes.connect("alice")
    async with a2a_client(notes.running, "notes-agent", headers=bearer(notes, "dave")) as client:
        waiting = await send(client, message(WHOAMI))
        assert state(waiting) == "TASK_STATE_AUTH_REQUIRED"
        replied = await send(client, message("go on", task_id=waiting.id))
    assert replied.id == waiting.id
    assert state(replied) == "TASK_STATE_COMPLETED"
    assert "notes is not connected for this user" in answer(replied)


async def test_an_a2a_0_3_client_sees_auth_required(notes: Notes) -> None:
    await notes.connect("alice")
    sent = {"role": "user", "parts": [{"kind": "text", "text": WHOAMI}], "messageId": "m-1"}
    async with httpx.AsyncClient(base_url=notes.url, headers=bearer(notes, "erin")) as http:
        answer = await http.post(
            f"/a2a/{notes.assistant}", json=rpc("message/send", {"message": sent})
        )
    task = answer.json()["result"]
    assert task["status"]["state"] == "auth-required"
    parts = task["status"]["message"]["parts"]
    assert "connect their own notes account" in parts[0]["text"]
    assert parts[1]["data"]["interrupts"][0]["value"]["type"] == "connection_required"


async def test_an_mcp_call_is_a_tool_error_with_the_link_and_goes_on_once_connected(
    notes: Notes,
) -> None:
    await notes.connect("alice")
    thread_id = str(uuid.uuid4())
    arguments = {"message": WHOAMI, "thread_id": thread_id}
    async with mcp_session(notes.running, bearer(notes, "bob")) as session:
        refused = await session.call_tool("notes-agent", arguments)
        assert refused.isError
        facts = refused.structuredContent or {}
        assert facts["status"] == "connection_required"
        assert facts["server"] == "notes"
        url = facts["authorization_url"]
        text = text_of(refused)
        assert "the user must connect their own notes account" in text
        assert f"open {url} " in text
        assert text.endswith(f"call this tool again with thread_id {thread_id} to go on.")
        await notes.consent(url, "bob")
        await idle_answer(notes.client("bob"), thread_id)  # the server resumed the run
        answered = await session.call_tool("notes-agent", arguments)
        assert not answered.isError, text_of(answered)
        assert text_of(answered) == "I am bob"
        assert (answered.structuredContent or {})["status"] == "success"
