"""The thread-centric stream protocol, driven by the official Python SDK's `threads.stream`
(over SSE and over a WebSocket), and on the wire where the SDK hides what matters."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

import httpx
import pytest
import websockets
from langgraph_sdk._async.stream import AsyncThreadStream
from langgraph_sdk.errors import NotFoundError

from agentctl.server.protocol.projection import RunView
from tests.conftest import eventually
from tests.server.conftest import ALICE, Running, TwoUsers, call, user

Transport = Literal["sse", "websocket"]
TRANSPORTS: list[Transport] = ["sse", "websocket"]
WRITE = call("write_file", file_path="/notes.md", content="hello") + "\n@say {last_tool_result}"
LIST = call("ls", path="/") + "\n@say listed"


async def wait_interrupted(thread: AsyncThreadStream) -> None:
    async def interrupted() -> bool:
        return thread.interrupted

    await eventually(interrupted)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_run_streams_messages_tool_calls_and_values(
    gated: Running, transport: Transport
) -> None:
    async with gated.client.threads.stream(assistant_id="gated", transport=transport) as thread:
        result = await thread.run.start(input=user(LIST))
        assert uuid.UUID(result["run_id"])

        # A projection feeds each message (tool call) only as it is iterated: collect them
        # while the run goes on, read their text (output) once it has ended.
        async def collect(projection: Any) -> list[Any]:
            return [item async for item in projection]

        async with asyncio.timeout(20):
            messages, calls, values = await asyncio.gather(
                collect(thread.messages), collect(thread.tool_calls), thread.output
            )
        texts_seen = [await message.text for message in messages]
        calls_seen = [(c.name, c.input, await c.output) for c in calls]
    assert texts_seen == ["", "listed"]  # the model's tool-calling turn, then its answer
    [(name, args, result_message)] = calls_seen
    assert (name, args) == ("ls", {"path": "/"})
    assert result_message["type"] == "tool"
    assert values["messages"][-1]["content"] == "listed"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_approval_gate_is_answered_through_the_command_channel(
    gated: Running, transport: Transport
) -> None:
    async with gated.client.threads.stream(assistant_id="gated", transport=transport) as thread:
        await thread.run.start(input=user(WRITE))
        await wait_interrupted(thread)
        [request] = thread.interrupts
        assert request["value"]["action_requests"][0]["name"] == "write_file"
        assert request["namespace"] == []
        await thread.run.respond({"decisions": [{"type": "approve"}]})
        output = await thread.output.with_timeout(20)
    assert output["messages"][-1]["content"] == "Updated file /notes.md"
    assert output["files"]["/notes.md"]["content"] == "hello"


async def test_an_answer_to_no_pending_interrupt_is_refused(gated: Running) -> None:
    thread_id = str(uuid.uuid4())
    await gated.client.threads.create(thread_id=thread_id)
    async with httpx.AsyncClient(base_url=gated.url) as http:
        answer = await command(
            http,
            thread_id,
            "input.respond",
            {"interrupt_id": "nope", "namespace": [], "response": 1},
        )
        assert answer["type"] == "error"
        assert answer["error"] == "no_such_interrupt"
        unknown = await command(http, thread_id, "run.teleport", {})
        assert unknown["error"] == "unknown_command"
        bad = await http.post(f"/threads/{thread_id}/commands", json={"method": "run.start"})
        assert bad.status_code == 400
        assert "integer `id`" in bad.json()["message"]


async def test_a_cancelled_run_ends_the_stream_as_failed(gated: Running) -> None:
    slow = "@slow 0.2 @say " + " ".join(["word"] * 60)
    async with gated.client.threads.stream(assistant_id="gated") as thread:
        run_id = (await thread.run.start(input=user(slow)))["run_id"]
        async for event in thread.subscribe(["messages"]):
            if event["params"]["data"]["event"] == "content-block-delta":
                break  # the first token: the run is under way
        await gated.client.runs.cancel(thread.thread_id, run_id)
        with pytest.raises(RuntimeError, match="cancelled"):
            await thread.output.with_timeout(20)
    run = await gated.client.runs.get(thread.thread_id, run_id)
    assert run["status"] == "interrupted"
    # The answer cut short ends with an `error`, never `message-finish`: a client must not
    # show it as a whole message.
    events = await read_events(gated.url, thread.thread_id, ["messages"])
    kinds = [e["params"]["data"]["event"] for e in events]
    assert kinds[0] == "message-start"
    assert "message-finish" not in kinds
    assert events[-1]["params"]["data"] == {
        "event": "error",
        "message": "the run was cancelled",
        "code": "cancelled",
    }


def test_a_failed_run_ends_its_open_message_with_an_error() -> None:
    """A run that fails while a message streams (the model's stream broke off) ends that
    message with the run's error; a run that succeeds finishes it."""
    chunk = {"type": "AIMessageChunk", "id": "m1", "content": "half an ans"}
    failed = RunView("r1", "gated")
    failed.project("messages", [chunk, {}])
    failed.project("error", {"error": "APIError", "message": "the model broke down"})
    ended = failed.end({"status": "error"})
    assert [(method, data["event"]) for method, _, data, _ in ended] == [
        ("messages", "error"),
        ("lifecycle", "failed"),
    ]
    assert ended[0][2]["message"] == "APIError: the model broke down"
    succeeded = RunView("r2", "gated")
    succeeded.project("messages", [chunk, {}])
    kinds = [data["event"] for _, _, data, _ in succeeded.end({"status": "success"})]
    assert kinds == ["content-block-finish", "message-finish", "completed"]


async def test_a_follow_up_run_on_the_same_stream(gated: Running) -> None:
    async with gated.client.threads.stream(assistant_id="gated") as thread:
        answers = []
        for text in ("first", "second"):
            await thread.run.start(input=user(f"@say {text}"))
            # A projection ends with the run going on when it is iterated.
            async with asyncio.timeout(20):
                messages = [message async for message in thread.messages]
            answers.append([await message.text for message in messages])
    assert answers == [["first"], ["second"]]
    state: Any = await gated.client.threads.get_state(thread.thread_id)
    contents = [m["content"] for m in state["values"]["messages"] if m["type"] == "ai"]
    assert contents == ["first", "second"]
    events = await read_events(gated.url, thread.thread_id, ["lifecycle"], runs=2)
    roots = [
        (e["params"]["data"]["event"], e["event_id"].split(":")[1])
        for e in events
        if not e["params"]["namespace"]
    ]
    first, second = roots[0][1], roots[-1][1]
    assert first != second
    assert roots == [
        ("running", first),
        ("completed", first),
        ("running", second),
        ("completed", second),
    ]


async def test_a_subagents_output_is_shown_under_its_namespace(gated: Running) -> None:
    delegate = call("task", description="say hi", subagent_type="helper") + "\n@say delegated"
    async with gated.client.threads.stream(assistant_id="gated") as thread:
        await thread.run.start(input=user(delegate))
        await thread.output.with_timeout(20)
        events = await read_events(gated.url, thread.thread_id, ["lifecycle", "messages"])
    started = [e for e in events if e["method"] == "lifecycle" and e["params"]["namespace"]]
    [begin, end] = started
    assert begin["params"]["data"]["event"] == "started"
    assert begin["params"]["data"]["graph_name"] == "helper"
    assert begin["params"]["data"]["cause"]["type"] == "toolCall"
    assert end["params"]["data"]["event"] == "completed"
    namespace = begin["params"]["namespace"]
    assert namespace[0].startswith("tools:")
    inner = "".join(
        e["params"]["data"]["delta"]["text"]
        for e in events
        if e["method"] == "messages"
        and e["params"]["namespace"] == namespace
        and e["params"]["data"]["event"] == "content-block-delta"
    )
    assert inner == "scripted reply to: say hi"


async def test_a_dropped_connection_resumes_with_nothing_lost_or_repeated(gated: Running) -> None:
    """A client that hangs up mid-run and reconnects with `since` gets exactly the rest."""
    slow = "@slow 0.05 @say " + " ".join(f"w{i}" for i in range(30))
    async with httpx.AsyncClient(base_url=gated.url, timeout=30) as http:
        thread_id = str(uuid.uuid4())
        answer = await command(
            http, thread_id, "run.start", {"assistant_id": "gated", "input": user(slow)}
        )
        assert answer["type"] == "success", answer
        first: list[dict[str, Any]] = []
        async for event in sse_events(http, thread_id, {"channels": ["messages", "lifecycle"]}):
            first.append(event)
            if len(first) == 8:
                break  # hang up mid-run
        rest = [
            event
            async for event in sse_events(
                http,
                thread_id,
                {"channels": ["messages", "lifecycle"], "since": first[-1]["seq"]},
                until_root_ends=True,
            )
        ]
        whole = [
            event
            async for event in sse_events(
                http, thread_id, {"channels": ["messages", "lifecycle"]}, until_root_ends=True
            )
        ]
    assert [e["event_id"] for e in first + rest] == [e["event_id"] for e in whole]
    seqs = [e["seq"] for e in whole]
    assert seqs == sorted(set(seqs))
    text = "".join(
        e["params"]["data"]["delta"]["text"]
        for e in first + rest
        if e["params"]["data"].get("event") == "content-block-delta"
    )
    assert text == " ".join(f"w{i}" for i in range(30))


async def test_a_subscription_is_checked(gated: Running) -> None:
    thread = await gated.client.threads.create()
    async with httpx.AsyncClient(base_url=gated.url) as http:
        path = f"/threads/{thread['thread_id']}/stream/events"
        for body, problem in [
            ({}, "`channels` must be a non-empty list"),
            ({"channels": ["values", "gossip"]}, "unknown channel 'gossip'"),
            ({"channels": ["values"], "depth": -1}, "`depth`"),
            ({"channels": ["values"], "since": "x"}, "`since`"),
        ]:
            response = await http.post(path, json=body)
            assert response.status_code == 400, body
            assert problem in response.json()["detail"]
        missing = await http.post(
            f"/threads/{uuid.uuid4()}/stream/events", json={"channels": ["values"]}
        )
        assert missing.status_code == 404


async def test_a_user_never_sees_another_users_thread_stream(two_users: TwoUsers) -> None:
    async with two_users.alice.threads.stream(assistant_id="demo") as thread:
        await thread.run.start(input=user("@say private"))
        await thread.output.with_timeout(20)
    thread_id = thread.thread_id
    bob_token = two_users.idp.mint("bob")
    async with httpx.AsyncClient(
        base_url=two_users.running.url, headers={"Authorization": f"Bearer {bob_token}"}
    ) as bob:
        stream = await bob.post(
            f"/threads/{thread_id}/stream/events", json={"channels": ["values"]}
        )
        assert stream.status_code == 404
        commands: list[tuple[str, dict[str, Any]]] = [
            ("run.start", {"assistant_id": "demo", "input": user("@say mine now")}),
            ("state.get", {"namespace": []}),
            ("agent.getTree", {}),
        ]
        for method, params in commands:
            answer = await command(bob, thread_id, method, params)
            assert answer["type"] == "error", (method, answer)
            assert "not found" in answer["message"]
    async with two_users.bob.threads.stream(thread_id, assistant_id="demo") as intruder:
        with pytest.raises(NotFoundError):
            await intruder.output.with_timeout(10)
    url = two_users.running.url.replace("http://", "ws://") + f"/threads/{thread_id}/stream/events"
    bearer = {"Authorization": f"Bearer {bob_token}"}
    async with websockets.connect(url, additional_headers=bearer) as socket:
        with pytest.raises(websockets.exceptions.ConnectionClosedError) as refused:
            await socket.recv()
    assert refused.value.rcvd is not None
    assert refused.value.rcvd.code == 4404  # 4000 + the HTTP status, as the SDKs read it
    async with websockets.connect(url) as socket:
        with pytest.raises(websockets.exceptions.ConnectionClosedError) as unsigned:
            await socket.recv()
    assert unsigned.value.rcvd is not None
    assert unsigned.value.rcvd.code == 4401
    async with httpx.AsyncClient(base_url=two_users.running.url) as stranger:
        anonymous = await stranger.post(
            f"/threads/{thread_id}/stream/events", json={"channels": ["values"]}
        )
    assert anonymous.status_code == 401


async def test_the_tree_and_state_commands(gated: Running) -> None:
    delegate = call("task", description="say hi", subagent_type="helper") + "\n@say delegated"
    async with gated.client.threads.stream(assistant_id="gated") as thread:
        await thread.run.start(input=user(delegate))
        await thread.output.with_timeout(20)
    async with httpx.AsyncClient(base_url=gated.url) as http:
        tree = (await command(http, thread.thread_id, "agent.getTree", {}))["result"]["tree"]
        assert tree["graph_name"] == "gated"
        assert tree["status"] == "completed"
        [child] = tree["children"]
        assert child["graph_name"] == "helper"
        state = await command(
            http, thread.thread_id, "state.get", {"namespace": [], "keys": ["messages"]}
        )
        assert list(state["result"]["values"]) == ["messages"]
        listed = await command(http, thread.thread_id, "state.listCheckpoints", {"limit": 3})
        checkpoints = listed["result"]["checkpoints"]
        assert len(checkpoints) == 3
        assert checkpoints[0]["id"] == state["result"]["checkpoint"]["id"]
        first = checkpoints[-1]["id"]
        forked = await command(http, thread.thread_id, "state.fork", {"checkpoint_id": first})
        assert forked["result"]["thread_id"] == thread.thread_id
        assert uuid.UUID(forked["result"]["run_id"])


# -- on the wire ----------------------------------------------------------------------------


async def command(
    http: httpx.AsyncClient, thread_id: str, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    response = await http.post(
        f"/threads/{thread_id}/commands", json={"id": 1, "method": method, "params": params}
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    assert answer["id"] == 1
    return answer


async def sse_events(
    http: httpx.AsyncClient, thread_id: str, body: dict[str, Any], *, until_root_ends: bool = False
) -> AsyncIterator[dict[str, Any]]:
    """The protocol events of `POST /threads/{id}/stream/events`, parsed from the SSE."""
    async with http.stream("POST", f"/threads/{thread_id}/stream/events", json=body) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            yield event
            data = event["params"]["data"]
            if (
                until_root_ends
                and event["method"] == "lifecycle"
                and not event["params"]["namespace"]
                and data["event"] in ("completed", "failed")
            ):
                return


async def read_events(
    url: str,
    thread_id: str,
    channels: list[str],
    *,
    runs: int = 1,
    until: tuple[str, ...] | str = ("completed", "failed"),
) -> list[dict[str, Any]]:
    """The thread's events on `channels` from its start until the `runs`-th time its run
    reached `until` (a root lifecycle event)."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        events, ended = [], 0
        async for event in sse_events(http, thread_id, {"channels": [*channels, "lifecycle"]}):
            if event["method"] in channels:
                events.append(event)
            data, root = event["params"]["data"], not event["params"]["namespace"]
            if event["method"] == "lifecycle" and root and data["event"] in until:
                ended += 1
                if ended == runs:
                    return events
    raise AssertionError("the stream ended before the runs did")


async def test_events_reach_a_socket_and_its_commands_are_answered(gated: Running) -> None:
    """A WebSocket takes commands as frames: start a run, subscribe, see it end."""
    thread_id = str(uuid.uuid4())
    url = gated.url.replace("http://", "ws://") + f"/threads/{thread_id}/stream/events"
    async with websockets.connect(url) as socket:
        start = {
            "id": 1,
            "method": "run.start",
            "params": {"assistant_id": "gated", "input": user("@say over the socket")},
        }
        await socket.send(json.dumps(start))
        assert json.loads(await socket.recv())["type"] == "success"
        subscribe = {
            "id": 2,
            "method": "subscription.subscribe",
            "params": {"channels": ["messages", "lifecycle"]},
        }
        await socket.send(json.dumps(subscribe))
        text, answered = "", False
        async with asyncio.timeout(20):
            while True:
                frame = json.loads(await socket.recv())
                if frame.get("type") == "success":
                    answered = frame["id"] == 2 and bool(frame["result"]["subscription_id"])
                    continue
                data = frame["params"]["data"]
                if data.get("event") == "content-block-delta":
                    text += data["delta"]["text"]
                if frame["method"] == "lifecycle" and data["event"] == "completed":
                    break
        assert answered
        assert text == "over the socket"
        await socket.send("not json")
        assert json.loads(await socket.recv())["error"] == "invalid_argument"


async def test_a_remote_graph_streams_events_v3(gated: Running) -> None:
    """`RemoteGraph.astream_events(version="v3")` runs the deployed agent through the
    thread stream: its messages projection and its output."""
    from langgraph.pregel.remote import RemoteGraph

    remote = RemoteGraph("gated", client=gated.client)
    async with await remote.astream_events(user("@say from afar"), version="v3") as run:
        async with asyncio.timeout(20):
            messages = [message async for message in run.messages]
            output = await run.output()
    assert [await message.text for message in messages] == ["from afar"]
    assert output["messages"][-1]["content"] == "from afar"


async def test_a_gate_inside_a_subagent_pauses_it_and_the_answer_resumes_it(
    gated: Running,
) -> None:
    inner = call("write_file", file_path="/deep.md", content="deep") + "\n@say wrote deep"
    delegate = call("task", description=inner, subagent_type="helper") + "\n@say delegated"
    async with gated.client.threads.stream(assistant_id="gated") as thread:
        await thread.run.start(input=user(delegate))
        await wait_interrupted(thread)
        [request] = thread.interrupts
        assert request["value"]["action_requests"][0]["name"] == "write_file"
        paused = await read_events(gated.url, thread.thread_id, ["lifecycle"], until="interrupted")
        subagent = [
            (e["params"]["data"]["graph_name"], e["params"]["data"]["event"])
            for e in paused
            if e["params"]["namespace"]
        ]
        assert subagent == [("helper", "started"), ("helper", "interrupted")]
        await thread.run.respond({"decisions": [{"type": "approve"}]})
        output = await thread.output.with_timeout(20)
    assert output["messages"][-1]["content"] == "delegated"
    assert output["files"]["/deep.md"]["content"] == "deep"


async def test_a_later_subscription_on_a_socket_gets_the_threads_history(gated: Running) -> None:
    """A subscription made after the run has ended (a projection opened late, or each
    subscription made again on a new socket after a reconnect) gets the run's events it
    asks for, in order; the socket's earlier subscriptions get nothing twice."""
    thread_id = str(uuid.uuid4())
    url = gated.url.replace("http://", "ws://") + f"/threads/{thread_id}/stream/events"
    seen: list[dict[str, Any]] = []

    async def until(socket: Any, done: Any) -> None:
        async with asyncio.timeout(20):
            while True:
                frame = json.loads(await socket.recv())
                if frame.get("type") == "event":
                    seen.append(frame)
                if done(frame):
                    return

    def request(command_id: int, method: str, params: dict[str, Any]) -> str:
        return json.dumps({"id": command_id, "method": method, "params": params})

    async with websockets.connect(url) as socket:
        run = {"assistant_id": "gated", "input": user("@say one two three")}
        await socket.send(request(1, "run.start", run))
        await socket.send(request(2, "subscription.subscribe", {"channels": ["lifecycle"]}))
        await until(
            socket,
            lambda f: (
                f.get("method") == "lifecycle" and f["params"]["data"]["event"] == "completed"
            ),
        )
        await socket.send(request(3, "subscription.subscribe", {"channels": ["messages"]}))
        await until(
            socket, lambda f: f.get("params", {}).get("data", {}).get("event") == "message-finish"
        )
        await socket.send(request(4, "agent.getTree", {}))
        await until(socket, lambda f: f.get("id") == 4)
    ids = [e["event_id"] for e in seen]
    assert len(ids) == len(set(ids))
    lifecycle = [e["params"]["data"]["event"] for e in seen if e["method"] == "lifecycle"]
    assert lifecycle == ["running", "completed"]
    messages = [e for e in seen if e["method"] == "messages"]
    assert messages[0]["params"]["data"]["event"] == "message-start"
    assert [e["seq"] for e in messages] == sorted(e["seq"] for e in messages)
    text = "".join(
        e["params"]["data"]["delta"]["text"]
        for e in messages
        if e["params"]["data"]["event"] == "content-block-delta"
    )
    assert text == "one two three"


async def test_input_sent_while_a_run_stops_at_a_gate_answers_the_gate(gated: Running) -> None:
    """`run.start` with input on a thread whose run is still going (it is about to stop at
    an approval gate) answers that gate once the run has stopped: the decision is made when
    the new run starts, not when it is sent."""
    async with httpx.AsyncClient(base_url=gated.url, timeout=30) as http:
        thread_id = str(uuid.uuid4())
        first = await command(
            http, thread_id, "run.start",
            {"assistant_id": "gated", "input": user("@sleep 0.3 " + WRITE)},
        )  # fmt: skip
        answer = await command(
            http, thread_id, "run.start",
            {"assistant_id": "gated", "input": {"decisions": [{"type": "approve"}]}},
        )  # fmt: skip
        assert first["type"] == answer["type"] == "success", (first, answer)
        events = await read_events(gated.url, thread_id, ["lifecycle"], runs=1)
        assert [e["params"]["data"]["event"] for e in events if not e["params"]["namespace"]] == [
            "running", "interrupted", "running", "completed",
        ]  # fmt: skip
    state: Any = await gated.client.threads.get_state(thread_id)
    assert state["values"]["files"]["/notes.md"]["content"] == "hello"


async def test_a_cancelled_queued_run_ends_as_failed(gated: Running) -> None:
    async with httpx.AsyncClient(base_url=gated.url, timeout=30) as http:
        thread_id = str(uuid.uuid4())
        slow = {"assistant_id": "gated", "input": user("@sleep 1 @say slow")}
        slow_run = await command(http, thread_id, "run.start", slow)
        queued = await command(http, thread_id, "run.start", slow)
        await gated.client.runs.cancel(thread_id, queued["result"]["run_id"])
        events = await read_events(gated.url, thread_id, ["lifecycle"], runs=2)
        ends = [(e["event_id"].split(":")[1], e["params"]["data"]) for e in events
                if e["params"]["data"]["event"] in ("completed", "failed")]  # fmt: skip
        assert dict(ends)[queued["result"]["run_id"]] == {
            "event": "failed", "graph_name": "gated", "error": "the run was cancelled",
        }  # fmt: skip
        latest = (await command(http, thread_id, "agent.getTree", {}))["result"]["tree"]
        assert latest["status"] == "failed"  # the thread's latest run: the cancelled one
        first = {"run_id": slow_run["result"]["run_id"]}
        tree = (await command(http, thread_id, "agent.getTree", first))["result"]["tree"]
        assert tree["status"] == "completed"


async def test_a_stream_of_a_deleted_thread_ends_before_its_id_serves_another_user(
    two_users: TwoUsers,
) -> None:
    thread_id = str(uuid.uuid4())
    await two_users.alice.threads.create(thread_id=thread_id)
    alice = {"Authorization": f"Bearer {two_users.idp.mint(ALICE)}"}
    async with httpx.AsyncClient(base_url=two_users.running.url, headers=alice, timeout=30) as http:
        body = {"channels": ["values", "messages", "lifecycle"]}
        seen: list[dict[str, Any]] = []

        async def watch() -> None:
            async for event in sse_events(http, thread_id, body):
                seen.append(event)

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0.3)
        await two_users.alice.threads.delete(thread_id)
        await two_users.bob.threads.create(thread_id=thread_id)
        await two_users.bob.runs.wait(thread_id, "demo", input=user("@say for bob only"))
        await asyncio.wait_for(watcher, 10)  # the stream ended
    assert seen == []
