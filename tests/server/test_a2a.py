"""`/a2a/{assistant_id}` through the official a2a-sdk client: the agent card, send, stream,
get, cancel, conversations (contextId = thread), approval gates (input-required → resume),
auth and isolation, and JSON-RPC errors."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory, create_client
from a2a.helpers import get_artifact_text, get_data_parts, get_message_text, new_data_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import (
    ContentTypeNotSupportedError,
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
)

from agentctl.server.access import AccessPolicy
from tests.server.conftest import ALICE, BOB, Running, TwoUsers, call, running_server
from tests.server.test_a2a_card import schema_problems

CARD_PATH = "/.well-known/agent-card.json"


@asynccontextmanager
async def a2a_client(
    running: Running,
    assistant: str = "demo",
    *,
    headers: dict[str, str] | None = None,
    streaming: bool = False,
) -> AsyncIterator[Client]:
    """The SDK's client for `assistant`, from its card at the well-known path."""
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        card = await A2ACardResolver(http, running.url).get_agent_card(
            relative_card_path=f"{CARD_PATH}?assistant_id={assistant}"
        )
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card)
        async with client:
            yield client


def message(
    text: str | None = None,
    *,
    context_id: str = "",
    task_id: str = "",
    data: Any = None,
) -> SendMessageRequest:
    parts = [Part(text=text)] if text is not None else []
    if data is not None:
        parts.append(new_data_part(data))
    return SendMessageRequest(
        message=Message(
            role=Role.ROLE_USER,
            parts=parts,
            message_id=str(uuid.uuid4()),
            context_id=context_id,
            task_id=task_id,
        )
    )


async def send(client: Client, request: SendMessageRequest) -> Task:
    """message/send: the task as it stands when the agent finished or paused."""
    [response] = [r async for r in client.send_message(request)]
    assert response.HasField("task"), response
    return response.task


def answer(task: Task) -> str:
    return get_artifact_text(task.artifacts[-1], delimiter="")


def state(task: Task) -> str:
    return str(TaskState.Name(task.status.state))


def statuses(events: list[StreamResponse]) -> list[str]:
    """The states of a stream's status updates, in order."""
    updates = [e.status_update for e in events if e.HasField("status_update")]
    return [TaskState.Name(u.status.state) for u in updates]


# -- the card --------------------------------------------------------------------------


async def test_agent_card_at_the_well_known_path_and_beside_the_endpoint(agent: Running) -> None:
    assistant_id = agent.server.deployment.assistant_id
    async with httpx.AsyncClient(base_url=agent.url) as http:
        default = (await http.get(CARD_PATH)).json()
        by_name = (await http.get(CARD_PATH, params={"assistant_id": "demo"})).json()
        by_id = (await http.get(f"/a2a/{assistant_id}{CARD_PATH}")).json()
        missing = await http.get(CARD_PATH, params={"assistant_id": "nobody"})
    assert default == by_name == by_id
    assert default["name"] == "demo"
    assert default["description"] == "The demo agent."  # never AGENTS.md (test_a2a_card.py)
    assert default["capabilities"]["streaming"] is True
    assert default["defaultOutputModes"] == ["text/plain"]
    assert default["supportedInterfaces"][0]["url"] == f"{agent.url}/a2a/{assistant_id}"
    assert default["url"] == f"{agent.url}/a2a/{assistant_id}"  # for v0.3 clients
    assert [s["id"] for s in default["skills"]] == ["demo", "skill:review"]
    assert "securitySchemes" not in default  # no auth: anyone may call
    assert missing.status_code == 404
    assert "nobody" in missing.json()["detail"]
    # The SDK finds the card from the endpoint's url too, and talks to the endpoint.
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, f"{agent.url}/a2a/{assistant_id}").get_agent_card()
    assert card.name == "demo"
    client = await create_client(f"{agent.url}/a2a/{assistant_id}", ClientConfig(streaming=False))
    async with client:
        assert answer(await send(client, message("found you"))) == "scripted reply to: found you"


async def test_the_card_has_an_etag_and_answers_304_while_it_is_unchanged(
    agent: Running,
) -> None:
    assistant_id = agent.server.deployment.assistant_id
    beside = f"/a2a/{assistant_id}{CARD_PATH}"
    # Cacheable when its URLs are the configured ones (see test_public_url.py for without).
    agent.server.info["public_url"] = "https://agents.example.com"
    async with httpx.AsyncClient(base_url=agent.url) as http:
        first = await http.get(CARD_PATH)
        etag = first.headers["etag"]
        assert first.headers["cache-control"] == "public, max-age=300"
        assert etag.startswith('"')
        assert etag.endswith('"')
        for sent in (etag, f"W/{etag}", f'"other", {etag}', "*"):
            again = await http.get(CARD_PATH, headers={"If-None-Match": sent})
            assert again.status_code == 304, sent
            assert again.content == b""
            assert again.headers["etag"] == etag
            assert again.headers["cache-control"] == "public, max-age=300"
        stale = await http.get(CARD_PATH, headers={"If-None-Match": '"other"'})
        assert stale.status_code == 200
        assert stale.json() == first.json()
        own = await http.get(beside)  # behind auth: no shared cache may keep it
        assert own.headers["cache-control"] == "private, max-age=300"
        assert own.headers["etag"] == etag
        assert (await http.get(beside, headers={"If-None-Match": etag})).status_code == 304
        # Another card is another ETag: the old one no longer matches.
        other = await agent.client.assistants.create("demo", name="other")
        theirs = await http.get(
            CARD_PATH,
            params={"assistant_id": other["assistant_id"]},
            headers={"If-None-Match": etag},
        )
        assert theirs.status_code == 200
        assert theirs.json()["name"] == "other"
        assert theirs.headers["etag"] != etag


async def test_the_endpoint_with_a_trailing_slash_is_served_not_redirected(
    agent: Running,
) -> None:
    endpoint = f"/a2a/{agent.server.deployment.assistant_id}/"
    async with httpx.AsyncClient(base_url=agent.url, timeout=30) as http:
        sent = await http.post(endpoint, json=rpc("message/send", {"message": V03_MESSAGE}, 3))
        assert sent.status_code == 200, sent.status_code
        assert sent.json()["id"] == 3
        assert sent.json()["result"]["status"]["state"] == "completed"
        by_name = await http.post("/a2a/demo/", json=rpc("tasks/get", {"id": "x:y"}))
        assert by_name.status_code == 200
        assert by_name.json()["error"]["code"] == -32001


# -- send, stream, get, cancel ---------------------------------------------------------


async def test_send_answers_and_the_task_is_a_run_on_the_thread(agent: Running) -> None:
    async with a2a_client(agent) as client:
        task = await send(client, message("hello"))
        assert state(task) == "TASK_STATE_COMPLETED"
        assert answer(task) == "scripted reply to: hello"
        assert [m.parts[0].text for m in task.history if m.role == Role.ROLE_USER] == ["hello"]
        thread_id, run_id = task.id.split(":")
        assert thread_id == task.context_id
        assert dict(task.metadata) == {"runId": run_id}  # camelCase, as A2A 1.0 keys are
        run = await agent.client.runs.get(thread_id, run_id)  # the same run in the LangGraph API
        assert run["status"] == "success"
        got = await client.get_task(GetTaskRequest(id=task.id))
    assert state(got) == "TASK_STATE_COMPLETED"
    assert answer(got) == "scripted reply to: hello"


async def test_stream_sends_status_updates_and_artifact_chunks_in_order(agent: Running) -> None:
    async with a2a_client(agent, streaming=True) as client:
        events = [e async for e in client.send_message(message("stream me please"))]
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task"
    assert state(events[0].task) == "TASK_STATE_SUBMITTED"
    assert statuses(events) == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert kinds[-1] == "status_update"
    working = next(e.status_update for e in events if e.HasField("status_update"))
    assert dict(working.metadata) == {"runId": events[0].task.id.split(":")[1]}
    chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert len(chunks) > 2  # the answer streamed in pieces, between working and completed
    first, *middle, last = chunks
    assert kinds.index("artifact_update") > kinds.index("status_update")
    assert not first.append
    assert all(c.append for c in middle)
    assert last.last_chunk
    assert not last.append
    streamed = "".join(c.artifact.parts[0].text for c in [first, *middle])
    assert get_artifact_text(last.artifact) == "scripted reply to: stream me please"
    assert "scripted reply to: stream me please".startswith(streamed)
    assert len({c.artifact.artifact_id for c in chunks}) == 1


async def test_cancel_stops_the_run(agent: Running) -> None:
    async with a2a_client(agent) as client:
        request = message("@sleep 5 @say too late")
        request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
        task = await send(client, request)
        thread_id, run_id = task.id.split(":")
        for _ in range(200):
            if (await agent.client.runs.get(thread_id, run_id))["status"] == "running":
                break
            await asyncio.sleep(0.02)
        cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
        assert state(cancelled) == "TASK_STATE_CANCELED"
        for _ in range(200):
            run = await agent.client.runs.get(thread_id, run_id)
            if run["status"] != "running":
                break
            await asyncio.sleep(0.02)
        assert run["status"] == "interrupted"
        got = await client.get_task(GetTaskRequest(id=task.id))
        assert state(got) == "TASK_STATE_CANCELED"
        with pytest.raises(TaskNotCancelableError):  # an ended task cannot be cancelled again
            await client.cancel_task(CancelTaskRequest(id=task.id))


async def test_unknown_task_is_not_found(agent: Running) -> None:
    async with a2a_client(agent) as client:
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id=f"{uuid.uuid4()}:{uuid.uuid4()}"))
        with pytest.raises(TaskNotFoundError):
            await client.cancel_task(CancelTaskRequest(id="nope"))


async def test_a_context_is_a_conversation(agent: Running) -> None:
    async with a2a_client(agent) as client:
        first = await send(client, message("one"))
        second = await send(client, message("two", context_id=first.context_id))
        assert second.context_id == first.context_id
        assert second.id != first.id
        assert answer(second) == "scripted reply to: two"
        fresh = await send(client, message("three"))
        assert fresh.context_id != first.context_id
        chosen = str(uuid.uuid4())  # a new contextId of the client's starts a conversation
        assert (await send(client, message("four", context_id=chosen))).context_id == chosen
        with pytest.raises(InvalidParamsError, match="not a UUID"):
            await send(client, message("five", context_id="my-chat"))
    values: Any = (await agent.client.threads.get_state(first.context_id))["values"]
    humans = [m["content"] for m in values["messages"] if m["type"] == "human"]
    assert humans == ["one", "two"]


async def test_a_part_the_agent_cannot_take_is_content_type_not_supported(
    agent: Running,
) -> None:
    not_taken = [
        Part(raw=b"\x89PNG", media_type="image/png", filename="a.png"),
        Part(url="https://example.com/report.pdf", media_type="application/pdf"),
        Part(text="<svg/>", media_type="image/svg+xml"),
        Part(raw=b"plain words"),
    ]
    async with a2a_client(agent) as client:
        for part in not_taken:
            request = message("look at this", context_id=str(uuid.uuid4()))
            request.message.parts.append(part)
            with pytest.raises(ContentTypeNotSupportedError, match="part 2 is ") as refused:
                await send(client, request)
            assert "text (text/plain) and data (application/json)" in str(refused.value)
            # No task was made, nor a thread for the context.
            assert await agent.server.storage.threads.get(request.message.context_id) is None
        markdown = message("# notes")
        markdown.message.parts[0].media_type = "text/markdown"
        markdown.message.parts.append(new_data_part({"n": 1}))
        markdown.message.parts[1].media_type = "application/json"
        task = await send(client, markdown)
        assert state(task) == "TASK_STATE_COMPLETED"
    v03_file = {
        **V03_MESSAGE,
        "parts": [
            {"kind": "file", "file": {"uri": "https://example.com/a.png", "mimeType": "image/png"}}
        ],
    }
    async with httpx.AsyncClient(base_url=agent.url, timeout=30) as http:
        reply = await post_rpc(
            http,
            "/a2a/demo",
            dumps(rpc("message/send", {"message": v03_file}, "f")),
        )
    assert reply["id"] == "f"
    assert reply["error"]["code"] == -32005
    assert "image/png" in reply["error"]["message"]


# -- approval gates --------------------------------------------------------------------

GATED = '[agent]\nname = "gated"\nmodel = "openai:scripted"\n[interrupt_on]\nwrite_file = true\n'
WRITE = call("write_file", file_path="/notes.md", content="hello") + "\n@say {last_tool_result}"


@pytest.fixture
async def gated(tmp_path: Path) -> AsyncIterator[Running]:
    root = tmp_path / "gated"
    root.mkdir()
    (root / "agent.toml").write_text(GATED)
    (root / "AGENTS.md").write_text("Gated.\n")
    async with running_server(root, tmp_path / "gated-data") as running:
        yield running


async def test_approval_gate_is_input_required_and_the_next_message_resumes(
    gated: Running,
) -> None:
    async with a2a_client(gated, "gated") as client:
        paused = await send(client, message(WRITE))
        assert state(paused) == "TASK_STATE_INPUT_REQUIRED"
        prompt = paused.status.message
        assert "write_file" in get_message_text(prompt)
        [data] = get_data_parts(prompt.parts)
        request = data["interrupts"][0]["value"]["action_requests"][0]
        assert request["name"] == "write_file"
        with pytest.raises(InvalidParamsError, match="approve"):  # not an answer
            await send(client, message("what?", context_id=paused.context_id))
        resumed = await send(
            client, message("approve", context_id=paused.context_id, task_id=paused.id)
        )
        assert resumed.id == paused.id
        assert state(resumed) == "TASK_STATE_COMPLETED"
        assert answer(resumed) == "Updated file /notes.md"
        # A reply on the context alone continues the waiting task too; a reason is kept.
        other = await send(client, message(WRITE))
        rejected = await send(client, message("reject: not now", context_id=other.context_id))
        assert rejected.id == other.id
        assert state(rejected) == "TASK_STATE_COMPLETED"
        assert "not now" in answer(rejected)
        # Decisions as data, the way the LangGraph API takes them.
        third = await send(client, message(WRITE))
        edited = {"name": "write_file", "args": {"file_path": "/edited.md", "content": "x"}}
        decisions = {"decisions": [{"type": "edit", "edited_action": edited}]}
        done = await send(client, message(data=decisions, context_id=third.context_id))
        assert answer(done).endswith("Updated file /edited.md")


async def test_streamed_approval_gate(gated: Running) -> None:
    async with a2a_client(gated, "gated", streaming=True) as client:
        events = [e async for e in client.send_message(message(WRITE))]
        last = events[-1].status_update
        assert TaskState.Name(last.status.state) == "TASK_STATE_INPUT_REQUIRED"
        resumed = [
            e
            async for e in client.send_message(
                message("yes", context_id=last.context_id, task_id=last.task_id)
            )
        ]
    assert statuses(resumed) == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert not any(e.HasField("task") for e in resumed)  # the same task goes on


async def test_a_waiting_task_follows_the_run_that_resumed_it_elsewhere(gated: Running) -> None:
    """A run no A2A message started resumes the task's run (as the server does once the user
    connected the account a task waits for): the task follows it to its end, and a message
    to the task then is refused, the task being completed."""
    async with a2a_client(gated, "gated") as client:
        paused = await send(client, message(WRITE))
        assert state(paused) == "TASK_STATE_INPUT_REQUIRED"
        thread_id = paused.context_id
        approve = {"decisions": [{"type": "approve"}]}
        await gated.client.runs.wait(thread_id, "gated", command={"resume": approve})
        got = await client.get_task(GetTaskRequest(id=paused.id))
        assert state(got) == "TASK_STATE_COMPLETED"
        assert got.metadata["runId"] != paused.metadata["runId"]  # the resuming run
        listed = await client.list_tasks(ListTasksRequest(context_id=thread_id))
        assert [state(task) for task in listed.tasks] == ["TASK_STATE_COMPLETED"]
        # Another run on the thread (not a resume) is not the task's.
        again = await send(client, message(WRITE, context_id=thread_id))
        await gated.client.runs.wait(thread_id, "gated", input={"messages": []})
        assert state(await client.get_task(GetTaskRequest(id=again.id))) == (
            "TASK_STATE_INPUT_REQUIRED"
        )


@pytest.mark.slow
async def test_tasks_outlive_a_restart(tmp_path: Path) -> None:
    """Tasks are stored: a restarted server still knows them, with their artifacts, and a
    task waiting at an approval gate is still resumed by the next message."""
    root = tmp_path / "gated"
    root.mkdir()
    (root / "agent.toml").write_text(GATED)
    (root / "AGENTS.md").write_text("Gated.\n")
    async with (
        running_server(root, tmp_path / "data") as running,
        a2a_client(running, "gated") as client,
    ):
        done = await send(client, message("hello"))
        approved = await send(client, message(WRITE))
        approved = await send(client, message("approve", task_id=approved.id))
        paused = await send(client, message(WRITE))
    async with (
        running_server(root, tmp_path / "data") as running,
        a2a_client(running, "gated") as client,
    ):
        for ended in (done, approved):  # as stored: the state and artifacts of its last run
            got = await client.get_task(GetTaskRequest(id=ended.id))
            assert state(got) == "TASK_STATE_COMPLETED"
            assert dict(got.metadata) == dict(ended.metadata)  # {"runId": its last run's}
            assert answer(got) == answer(ended)
        # A task stored as working by a replica that stopped before its run ended (the run
        # went on elsewhere): its state is its run's, its artifacts those stored.
        tasks = running.server.storage.a2a_tasks
        stored = await tasks.get(done.id)
        assert stored is not None
        left = {**stored.task, "status": {**stored.task["status"], "state": "TASK_STATE_WORKING"}}
        await tasks.put(replace(stored, state="TASK_STATE_WORKING", task=left))
        settled = await client.get_task(GetTaskRequest(id=done.id))
        assert state(settled) == "TASK_STATE_COMPLETED"
        assert answer(settled) == answer(done)
        listed = await client.list_tasks(ListTasksRequest(context_id=done.context_id))
        assert [state(task) for task in listed.tasks] == ["TASK_STATE_COMPLETED"]
        # A task never stored (from before tasks were) is rebuilt from its run: its state.
        assert await running.server.storage.a2a_tasks.delete(done.id)
        rebuilt = await client.get_task(GetTaskRequest(id=done.id))
        assert state(rebuilt) == "TASK_STATE_COMPLETED"
        assert list(rebuilt.artifacts) == []
        assert approved.metadata["runId"] != approved.id.split(":")[1]  # resumed in a later run
        waiting = await client.get_task(GetTaskRequest(id=paused.id))
        assert state(waiting) == "TASK_STATE_INPUT_REQUIRED"
        assert waiting.context_id == paused.context_id
        resumed = await send(client, message("approve", task_id=paused.id))
        assert resumed.id == paused.id
        assert state(resumed) == "TASK_STATE_COMPLETED"
        assert answer(resumed) == "Updated file /notes.md"


# -- auth ------------------------------------------------------------------------------


def rpc(method: str, params: Any, id_: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


V03_MESSAGE = {"role": "user", "parts": [{"kind": "text", "text": "hi"}], "messageId": "m-1"}


async def test_deployment_key_is_required_but_the_card_is_public(agent: Running) -> None:
    agent.server.access = AccessPolicy(api_key="k")
    endpoint = f"/a2a/{agent.server.deployment.assistant_id}"
    async with httpx.AsyncClient(base_url=agent.url) as http:
        refused = await http.post(endpoint, json=rpc("message/send", {"message": V03_MESSAGE}))
        assert refused.status_code == 401
        assert (await http.get(f"{endpoint}{CARD_PATH}")).status_code == 401
        card = (await http.get(CARD_PATH)).json()
    assert card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["name"] == "x-api-key"
    async with a2a_client(agent, headers={"x-api-key": "k"}) as client:
        assert answer(await send(client, message("keyed"))) == "scripted reply to: keyed"


async def test_a_users_tasks_and_contexts_are_theirs_alone(two_users: TwoUsers) -> None:
    running, idp = two_users.running, two_users.idp
    alice = {"Authorization": f"Bearer {idp.mint(ALICE)}"}
    bob = {"Authorization": f"Bearer {idp.mint(BOB)}"}
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, running.url).get_agent_card()
        v1 = (await http.get(f"{running.url}{CARD_PATH}", headers={"A2A-Version": "1.0"})).json()
    assert card.security_requirements[0].schemes.keys() == {"bearer"}
    assert v1["securityRequirements"] == [{"schemes": {"bearer": {}}}]
    assert schema_problems(v1) == []
    async with a2a_client(running, headers=alice) as as_alice:
        task = await send(as_alice, message("secret plans"))
        assert state(task) == "TASK_STATE_COMPLETED"
        thread = await running.server.storage.threads.get(task.context_id)
        assert thread is not None
        assert thread.metadata["owner"] == ALICE
    async with a2a_client(running, headers=bob) as as_bob:
        with pytest.raises(TaskNotFoundError):
            await as_bob.get_task(GetTaskRequest(id=task.id))
        with pytest.raises(TaskNotFoundError):
            await as_bob.cancel_task(CancelTaskRequest(id=task.id))
        with pytest.raises(InvalidParamsError, match="not found"):
            await send(as_bob, message("me too", context_id=task.context_id))
        with pytest.raises(TaskNotFoundError):
            await send(as_bob, message("me too", task_id=task.id))
        own = await send(as_bob, message("mine"))
        listed = await as_bob.list_tasks(ListTasksRequest())
        assert [t.id for t in listed.tasks] == [own.id]
    values: Any = (await two_users.alice.threads.get_state(task.context_id))["values"]
    assert [m["content"] for m in values["messages"] if m["type"] == "human"] == ["secret plans"]
    thread = await running.server.storage.threads.get(own.context_id)
    assert thread is not None
    assert thread.metadata["owner"] == BOB


# -- JSON-RPC errors -------------------------------------------------------------------


async def post_rpc(
    http: httpx.AsyncClient, path: str, body: Any, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    response = await http.post(path, content=body, headers=headers or {})
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


async def test_bad_json_rpc_gets_protocol_errors_and_the_server_keeps_serving(
    agent: Running,
) -> None:
    endpoint = f"/a2a/{agent.server.deployment.assistant_id}"
    v1 = {"A2A-Version": "1.0", "Content-Type": "application/json"}
    json_headers = {"Content-Type": "application/json"}

    async with httpx.AsyncClient(base_url=agent.url, timeout=30) as http:
        malformed = await post_rpc(http, endpoint, b'{"jsonrpc": "2.0", "method": ', json_headers)
        assert malformed["error"]["code"] == -32700
        unknown = await post_rpc(http, endpoint, dumps(rpc("tasks/explode", {})), json_headers)
        assert unknown["error"]["code"] == -32601
        assert unknown["id"] == 1
        bad_params = await post_rpc(
            http, endpoint, dumps(rpc("SendMessage", {"message": 5}, "x")), v1
        )
        assert bad_params["error"]["code"] == -32602
        assert bad_params["id"] == "x"
        unversioned = rpc("SendMessage", {"message": {"role": "ROLE_USER", "parts": []}})
        no_version = await post_rpc(http, endpoint, dumps(unversioned), json_headers)
        assert no_version["error"]["code"] == -32009  # 1.0 methods need A2A-Version: 1.0
        not_rpc = await post_rpc(http, endpoint, dumps({"hello": "world"}), json_headers)
        assert not_rpc["error"]["code"] == -32600
        v03_bad = await post_rpc(
            http, endpoint, dumps(rpc("message/send", {"nope": 1})), json_headers
        )
        assert v03_bad["error"] == {
            "code": -32602,
            "message": "Invalid params: params.message: Field required",
        }
        # The v0.3 method names, as the reference server takes them, still work.
        sent = await post_rpc(
            http, endpoint, dumps(rpc("message/send", {"message": V03_MESSAGE}, 7)), json_headers
        )
        assert sent["id"] == 7
        result = sent["result"]
        assert result["kind"] == "task"
        assert result["status"]["state"] == "completed"
        got = await post_rpc(
            http, endpoint, dumps(rpc("tasks/get", {"id": result["id"]})), json_headers
        )
        assert got["result"]["status"]["state"] == "completed"
        assert got["result"]["contextId"] == result["contextId"]
        missing = await http.post("/a2a/nobody", content=dumps(rpc("tasks/get", {"id": "x"})))
        assert missing.status_code == 404


async def test_invalid_params_of_the_v03_methods_are_invalid_params(agent: Running) -> None:
    no_text = {**V03_MESSAGE, "parts": [{"kind": "text"}]}
    cases: list[tuple[str, Any, str]] = [
        ("message/send", {"message": no_text}, "params.message.parts.0.text: Field required"),
        ("message/stream", {"message": {**V03_MESSAGE, "role": "robot"}}, "params.message.role"),
        ("message/send", 5, "params: "),
        ("tasks/get", {}, "params.id: Field required"),
        ("tasks/cancel", {"id": 5}, "params.id: "),
        ("tasks/get", None, "params: "),
    ]
    async with httpx.AsyncClient(base_url=agent.url, timeout=30) as http:
        for number, (method, params, named) in enumerate(cases):
            reply = await post_rpc(http, "/a2a/demo", dumps(rpc(method, params, number)))
            assert reply["id"] == number, (method, params)
            assert reply["error"]["code"] == -32602, (method, params, reply)
            message_ = reply["error"]["message"]
            assert message_.startswith(f"Invalid params: {named}"), (method, params, message_)
            assert "pydantic" not in message_
            assert "validation error" not in message_


async def test_list_tasks_with_an_unknown_status_is_invalid_params(agent: Running) -> None:
    v1 = {"A2A-Version": "1.0", "Content-Type": "application/json"}
    async with a2a_client(agent) as client:
        done = await send(client, message("done"))
    async with httpx.AsyncClient(base_url=agent.url, timeout=30) as http:
        for status in ("TASK_STATE_DONE", "completed", 99, True, {"state": 3}):
            body = dumps(rpc("ListTasks", {"status": status}, "l"))
            reply = await post_rpc(http, "/a2a/demo", body, v1)
            assert reply["id"] == "l"
            assert reply["error"]["code"] == -32602, (status, reply)
            assert "params.status: unknown task state" in reply["error"]["message"]
            assert "TASK_STATE_COMPLETED" in reply["error"]["message"]
        for status in ("TASK_STATE_COMPLETED", 3):
            body = dumps(rpc("ListTasks", {"status": status}, "ok"))
            listed = await post_rpc(http, "/a2a/demo", body, v1)
            assert [t["id"] for t in listed["result"]["tasks"]] == [done.id], status
        working = dumps(rpc("ListTasks", {"status": "TASK_STATE_WORKING"}))
        assert (await post_rpc(http, "/a2a/demo", working, v1))["result"]["tasks"] == []
