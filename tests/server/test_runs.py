"""Runs through the official langgraph-sdk client: background, wait, join, cancel,
multitask strategies, stateless runs, subgraphs, resumable streams and approval gates."""

from __future__ import annotations

import asyncio
import uuid
from functools import partial
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError
from langgraph_sdk.schema import StreamPart

from agentctl.storage.base import Page, ThreadFilter
from tests.conftest import eventually
from tests.server.conftest import Running, call, running_server, user
from tests.server.test_system import samples
from tests.storage.conftest import postgres_opener


def new_thread_id() -> str:
    return str(uuid.uuid4())


async def collect(stream: Any, limit: int | None = None) -> list[StreamPart]:
    """The stream's parts (the first `limit` only, when given)."""
    parts: list[StreamPart] = []
    async for part in stream:
        parts.append(part)
        if len(parts) == limit:
            break
    return parts


def last_answer(values: object) -> str:
    assert isinstance(values, dict), values
    return str(values["messages"][-1]["content"])


async def test_wait_returns_the_final_values(agent: Running) -> None:
    thread_id = new_thread_id()
    values = await agent.client.runs.wait(
        thread_id, "demo", input=user("hi"), if_not_exists="create"
    )
    assert last_answer(values) == "scripted reply to: hi"
    again: Any = await agent.client.runs.wait(thread_id, "demo", input=user("again"))
    assert [m["content"] for m in again["messages"] if m["type"] == "human"] == ["hi", "again"]


async def test_stateless_wait_and_stream_leave_nothing_behind(agent: Running) -> None:
    values = await agent.client.runs.wait(None, "demo", input=user("stateless"))
    assert last_answer(values) == "scripted reply to: stateless"
    parts = await collect(agent.client.runs.stream(None, "demo", input=user("streamed")))
    assert [parts[0].event, parts[-1].event] == ["metadata", "end"]
    assert last_answer(parts[-2].data) == "scripted reply to: streamed"
    threads, total = await agent.server.storage.threads.search(ThreadFilter(), Page(limit=100))
    assert total == 0, threads


async def test_assistant_may_be_named_by_graph_or_uuid(agent: Running) -> None:
    assistant_id = agent.server.deployment.assistant_id
    values = await agent.client.runs.wait(None, assistant_id, input=user("by id"))
    assert last_answer(values) == "scripted reply to: by id"
    with pytest.raises(NotFoundError, match="serves the agent 'demo'"):
        await agent.client.runs.create(None, "nope", input=user("x"))


async def test_background_run_join_and_list(agent: Running) -> None:
    thread_id = new_thread_id()
    run = await agent.client.runs.create(
        thread_id, "demo", input=user("background"), if_not_exists="create"
    )
    assert run["status"] == "pending"
    values = await agent.client.runs.join(thread_id, run["run_id"])
    assert last_answer(values) == "scripted reply to: background"
    done = await agent.client.runs.get(thread_id, run["run_id"])
    assert done["status"] == "success"
    listed = await agent.client.runs.list(thread_id)
    assert [r["run_id"] for r in listed] == [run["run_id"]]
    await agent.client.runs.delete(thread_id, run["run_id"])
    with pytest.raises(NotFoundError):
        await agent.client.runs.get(thread_id, run["run_id"])


async def test_join_of_a_run_whose_events_expired_answers_the_threads_values(
    agent: Running,
) -> None:
    """Events expire (Redis keeps them `AGENTCTL_EVENT_TTL_SECONDS`); a run's result does not."""
    thread_id = new_thread_id()
    run = await agent.client.runs.create(
        thread_id, "demo", input=user("long ago"), if_not_exists="create"
    )
    await agent.client.runs.join(thread_id, run["run_id"])
    await agent.server.storage.events.delete(thread_id)
    values = await agent.client.runs.join(thread_id, run["run_id"])
    assert last_answer(values) == "scripted reply to: long ago"


async def test_join_stream_replays_from_the_start_or_after_an_id(agent: Running) -> None:
    thread_id = new_thread_id()
    parts = await collect(
        agent.client.runs.stream(
            thread_id, "demo", input=user("replay me"), if_not_exists="create",
            stream_mode=["values", "updates"],
        )
    )  # fmt: skip
    run_id = parts[0].data["run_id"]
    replay = await collect(agent.client.runs.join_stream(thread_id, run_id, last_event_id="-"))
    assert [(p.event, p.id) for p in replay] == [(p.event, p.id) for p in parts]
    # The JS SDK's useStream rejoins with `-1`.
    replay = await collect(agent.client.runs.join_stream(thread_id, run_id, last_event_id="-1"))
    assert [(p.event, p.id) for p in replay] == [(p.event, p.id) for p in parts]
    middle = len(parts) // 2
    rest = await collect(
        agent.client.runs.join_stream(thread_id, run_id, last_event_id=parts[middle].id)
    )
    assert [p.id for p in rest] == [p.id for p in parts[middle + 1 :]]
    only_values = await collect(
        agent.client.runs.join_stream(thread_id, run_id, stream_mode="values")
    )
    assert {p.event for p in only_values} == {"metadata", "values", "end"}


async def test_join_stream_last_event_id_minus_one_replays_like_dash(agent: Running) -> None:
    thread_id = new_thread_id()
    run = await agent.client.runs.create(
        thread_id, "demo", input=user("hi"), if_not_exists="create"
    )
    await agent.client.runs.join(thread_id, run["run_id"])
    dash = await collect(agent.client.runs.join_stream(thread_id, run["run_id"], last_event_id="-"))
    minus_one = await collect(
        agent.client.runs.join_stream(thread_id, run["run_id"], last_event_id="-1")
    )  # what the JS SDK's useStream sends when it rejoins a run
    assert [p.id for p in minus_one] == [p.id for p in dash]
    assert minus_one[-1].event == "end"
    thread = await collect(await agent.client.threads.join_stream(thread_id, last_event_id="-1"), 2)
    assert [p.id for p in thread] == [p.id for p in dash[:2]]


async def test_join_stream_after_an_id_that_names_no_event_goes_on_live(agent: Running) -> None:
    thread_id = new_thread_id()
    run = await agent.client.runs.create(
        thread_id, "demo", input=user("@sleep 1 @say later"), if_not_exists="create"
    )
    await _until_status(agent, thread_id, run["run_id"], "running")
    unknown = "99999999999999-0"  # well formed, past every event
    parts = await asyncio.wait_for(
        collect(agent.client.runs.join_stream(thread_id, run["run_id"], last_event_id=unknown)), 10
    )
    assert parts[-1].event == "end"
    assert last_answer(parts[-2].data) == "later"
    async with httpx.AsyncClient(base_url=agent.url) as http:
        for malformed in ("banana", "5--3", "1" * 30):
            response = await http.get(
                f"/threads/{thread_id}/runs/{run['run_id']}/stream",
                headers={"Last-Event-ID": malformed},
            )
            assert response.status_code == 422, malformed
            assert "not an event id" in response.json()["detail"]


async def test_join_stream_of_a_running_run_gets_every_event(agent: Running) -> None:
    thread_id = new_thread_id()
    run = await agent.client.runs.create(
        thread_id, "demo", input=user("@slow 0.5 @say a slow answer"), if_not_exists="create",
        stream_mode=["values", "messages-tuple"],
    )  # fmt: skip
    parts = await collect(agent.client.runs.join_stream(thread_id, run["run_id"]))
    assert parts[0].event == "metadata"
    streamed = "".join(
        str(p.data[0]["content"]) for p in parts if p.event == "messages"
        and p.data[0]["type"] == "AIMessageChunk"
    )  # fmt: skip
    assert "a slow answer" in streamed
    ids = [p.id for p in parts]
    assert len(ids) == len(set(ids))


async def test_subgraph_events_carry_their_namespace(agent: Running) -> None:
    script = call("task", description="find it", subagent_type="researcher") + "\n@say ok"
    parts = await collect(
        agent.client.runs.stream(
            None, "demo", input=user(script), stream_mode=["updates"], stream_subgraphs=True
        )
    )
    namespaced = [p.event for p in parts if "|" in p.event]
    assert namespaced, [p.event for p in parts]
    assert all(e.startswith("updates|tools:") for e in namespaced)
    plain = await collect(
        agent.client.runs.stream(None, "demo", input=user(script), stream_mode=["updates"])
    )
    assert not [p.event for p in plain if "|" in p.event]


async def test_reject_strategy_refuses_a_second_run(agent: Running) -> None:
    thread_id = new_thread_id()
    first = await agent.client.runs.create(
        thread_id, "demo", input=user("@sleep 1 @say first"), if_not_exists="create"
    )
    with pytest.raises(ConflictError, match="already running"):
        await agent.client.runs.create(
            thread_id, "demo", input=user("second"), multitask_strategy="reject"
        )
    await agent.client.runs.join(thread_id, first["run_id"])


async def test_enqueue_runs_one_after_the_other(agent: Running) -> None:
    thread_id = new_thread_id()
    first = await agent.client.runs.create(
        thread_id, "demo", input=user("@sleep 0.3 @say first"), if_not_exists="create"
    )
    second = await agent.client.runs.create(thread_id, "demo", input=user("second"))
    values = await agent.client.runs.join(thread_id, second["run_id"])
    answers = [m["content"] for m in values["messages"] if m["type"] == "ai"]
    assert answers == ["first", "scripted reply to: second"]
    assert (await agent.client.runs.get(thread_id, first["run_id"]))["status"] == "success"


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
async def test_interrupt_and_rollback_stop_the_running_run(
    agent: Running, strategy: Literal["interrupt", "rollback"]
) -> None:
    thread_id = new_thread_id()
    first = await agent.client.runs.create(
        thread_id, "demo", input=user("@sleep 5 @say never"), if_not_exists="create"
    )
    await _until_status(agent, thread_id, first["run_id"], "running")
    second = await agent.client.runs.create(
        thread_id, "demo", input=user("instead"), multitask_strategy=strategy
    )
    values = await agent.client.runs.join(thread_id, second["run_id"])
    assert last_answer(values) == "scripted reply to: instead"
    if strategy == "interrupt":
        stopped = await agent.client.runs.get(thread_id, first["run_id"])
        assert stopped["status"] == "interrupted"
    else:
        with pytest.raises(NotFoundError):
            await agent.client.runs.get(thread_id, first["run_id"])
        humans = [m["content"] for m in values["messages"] if m["type"] == "human"]
        assert "@sleep 5 @say never" not in humans


async def test_cancel_a_running_run(agent: Running) -> None:
    thread_id = new_thread_id()
    run = await agent.client.runs.create(
        thread_id, "demo", input=user("@sleep 5 @say never"), if_not_exists="create"
    )
    await _until_status(agent, thread_id, run["run_id"], "running")
    await agent.client.runs.cancel(thread_id, run["run_id"], wait=True)
    assert (await agent.client.runs.get(thread_id, run["run_id"]))["status"] == "interrupted"
    # As the reference answers: there is no run in flight to cancel.
    with pytest.raises(NotFoundError, match="already ended"):
        await agent.client.runs.cancel(thread_id, run["run_id"])
    # The list says why the run stopped, and answers only the fields `select` names.
    listed: list[Any] = await agent.client.runs.list(thread_id)
    assert [(r["cancel_reason"], r["attempt"]) for r in listed] == [("cancelled", 1)]
    picked: list[Any] = await agent.client.runs.list(thread_id, select=["run_id", "cancel_reason"])
    assert picked == [{"run_id": run["run_id"], "cancel_reason": "cancelled"}]
    # Older JS SDKs send the list as one JSON value.
    http = agent.client.http.client
    as_json = await http.get(f"/threads/{thread_id}/runs", params={"select": '["status"]'})
    assert as_json.json() == [{"status": "interrupted"}]
    for select in ("nope", '["status", "nope"]', "[1]"):
        response = await http.get(f"/threads/{thread_id}/runs", params={"select": select})
        assert response.status_code == 422, select
        assert response.json()["detail"].startswith("query parameter select: "), select


async def test_after_seconds_delays_the_start(agent: Running) -> None:
    thread_id = new_thread_id()
    run = await agent.client.runs.create(
        thread_id, "demo", input=user("later"), if_not_exists="create", after_seconds=1
    )
    await asyncio.sleep(0.5)
    assert (await agent.client.runs.get(thread_id, run["run_id"]))["status"] == "pending"
    values = await agent.client.runs.join(thread_id, run["run_id"])
    assert last_answer(values) == "scripted reply to: later"


async def test_failed_run_streams_an_error_and_wait_reports_it(agent: Running) -> None:
    parts = await collect(agent.client.runs.stream(None, "demo", input=user("@fail 400 bad")))
    assert [p.event for p in parts[-2:]] == ["error", "end"]
    assert parts[-2].data["error"]
    assert parts[-1].data["status"] == "error"
    with pytest.raises(Exception, match="bad"):
        await agent.client.runs.wait(None, "demo", input=user("@fail 400 bad"))


async def test_resume_without_a_pending_interrupt_is_ignored(agent: Running) -> None:
    thread_id = new_thread_id()
    before = await agent.client.runs.wait(
        thread_id, "demo", input=user("hi"), if_not_exists="create"
    )
    run = await agent.client.runs.create(thread_id, "demo", command={"resume": "yes"})
    after = await agent.client.runs.join(thread_id, run["run_id"])
    assert after == before
    assert (await agent.client.runs.get(thread_id, run["run_id"]))["status"] == "success"


async def test_unknown_thread_is_404_unless_created(agent: Running) -> None:
    with pytest.raises(NotFoundError, match="if_not_exists"):
        await agent.client.runs.create(new_thread_id(), "demo", input=user("x"))


async def test_thread_stream_carries_every_run(agent: Running) -> None:
    thread_id = new_thread_id()
    await agent.client.runs.wait(thread_id, "demo", input=user("one"), if_not_exists="create")
    seen: list[StreamPart] = []

    async def follow() -> None:
        stream = await agent.client.threads.join_stream(thread_id, last_event_id="-")
        async for part in stream:
            seen.append(part)
            done = [p for p in seen if p.event == "metadata" and p.data.get("status") == "run_done"]
            if len(done) == 3:
                return

    follower = asyncio.create_task(follow())
    await agent.client.runs.wait(thread_id, "demo", input=user("two"))
    background = await agent.client.runs.create(thread_id, "demo", input=user("three"))
    await asyncio.wait_for(follower, 10)
    run_ids = [p.data["run_id"] for p in seen if p.event == "metadata" and "attempt" in p.data]
    assert len(run_ids) == 3
    assert run_ids[-1] == background["run_id"]
    ids = [str(p.id) for p in seen]
    assert ids == sorted(ids, key=lambda i: tuple(int(x) for x in i.split("-")))


async def _until_status(agent: Running, thread_id: str, run_id: str, status: str) -> None:
    for _ in range(200):
        if (await agent.client.runs.get(thread_id, run_id))["status"] == status:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"run never became {status}")


WRITE = call("write_file", file_path="/notes.md", content="hello") + "\n@say {last_tool_result}"


async def test_approval_gate_pauses_and_approve_resumes(gated: Running) -> None:
    thread_id = new_thread_id()
    parts = await collect(
        gated.client.runs.stream(
            thread_id, "gated", input=user(WRITE), if_not_exists="create",
            stream_mode=["updates", "values"],
        )
    )  # fmt: skip
    interrupt_parts = [p for p in parts if "__interrupt__" in (p.data or {})]
    assert interrupt_parts, [p.event for p in parts]
    [interrupt] = interrupt_parts[0].data["__interrupt__"]
    assert interrupt["value"]["action_requests"][0]["name"] == "write_file"
    run_id = parts[0].data["run_id"]
    assert (await gated.client.runs.get(thread_id, run_id))["status"] == "interrupted"
    thread = await gated.server.storage.threads.get(thread_id)
    assert thread is not None
    assert thread.status == "interrupted"
    assert next(iter(thread.interrupts.values()))[0]["id"] == interrupt["id"]
    values = await gated.client.runs.wait(
        thread_id, "gated", command={"resume": {"decisions": [{"type": "approve"}]}}
    )
    assert last_answer(values) == "Updated file /notes.md"


async def test_approval_gate_in_a_subagent_pauses_the_run(gated: Running) -> None:
    # The subagent's own script (its task description) hits the gate.
    script = call("task", description=WRITE, subagent_type="helper") + "\n@say done"
    thread_id = new_thread_id()
    paused: Any = await gated.client.runs.wait(
        thread_id, "gated", input=user(script), if_not_exists="create"
    )
    [interrupt] = paused["__interrupt__"]
    assert interrupt["value"]["action_requests"][0]["name"] == "write_file"
    [run] = await gated.client.runs.list(thread_id)
    assert run["status"] == "interrupted"
    values = await gated.client.runs.wait(
        thread_id, "gated", command={"resume": {"decisions": [{"type": "approve"}]}}
    )
    assert last_answer(values) == "done"


async def test_approval_gate_edit_and_reject(gated: Running) -> None:
    thread_id = new_thread_id()
    paused: Any = await gated.client.runs.wait(
        thread_id, "gated", input=user(WRITE), if_not_exists="create"
    )
    assert paused["__interrupt__"]
    edited = {
        "type": "edit",
        "edited_action": {"name": "write_file",
                          "args": {"file_path": "/edited.md", "content": "x"}},
    }  # fmt: skip
    values = await gated.client.runs.wait(
        thread_id, "gated", command={"resume": {"decisions": [edited]}}
    )
    assert last_answer(values).endswith("Updated file /edited.md")
    other = new_thread_id()
    await gated.client.runs.wait(other, "gated", input=user(WRITE), if_not_exists="create")
    rejected = await gated.client.runs.wait(
        other, "gated",
        command={"resume": {"decisions": [{"type": "reject", "message": "not now"}]}},
    )  # fmt: skip
    assert "not now" in last_answer(rejected)


async def test_strict_resume_refuses_an_interrupt_that_is_not_waiting(gated: Running) -> None:
    info = await gated.client.http.get("/info")
    assert info["flags"]["strict_resume"] is True
    thread_id = new_thread_id()
    paused: Any = await gated.client.runs.wait(
        thread_id, "gated", input=user(WRITE), if_not_exists="create"
    )
    [interrupt] = paused["__interrupt__"]
    approve = {"decisions": [{"type": "approve"}]}
    unknown = {"0" * 32: approve}  # a resume map naming an interrupt that is not pending
    parts = await collect(
        gated.client.runs.stream(
            thread_id, "gated", command={"resume": unknown}, strict_resume=True
        )
    )
    assert [p.event for p in parts[-2:]] == ["error", "end"]
    assert parts[-2].data["error"] == "UnknownInterruptError"
    assert parts[-1].data["status"] == "error"
    # The thread stays as it was: the gate still waits, and can be answered.
    thread = await gated.client.threads.get(thread_id)
    assert [i["id"] for i in next(iter(thread["interrupts"].values()))] == [interrupt["id"]]
    values = await gated.client.runs.wait(
        thread_id, "gated", command={"resume": {interrupt["id"]: approve}}, strict_resume=True
    )
    assert last_answer(values) == "Updated file /notes.md"
    # Without strict_resume, the same unknown answer is ignored.
    ignored = await gated.client.runs.create(thread_id, "gated", command={"resume": unknown})
    await gated.client.runs.join(thread_id, ignored["run_id"])
    status = (await gated.client.runs.get(thread_id, ignored["run_id"]))["status"]
    assert status == "success"


@pytest.mark.slow
async def test_a_full_replica_leaves_runs_pending_and_shows_it(demo: Path, tmp_path: Path) -> None:
    """With `max_runs` runs executing, further runs wait, pending, and start as slots free
    up; /metrics shows the replica's capacity, its runs in flight and the queue."""
    async with running_server(demo, tmp_path / "data", max_runs=2) as agent:
        runs = [
            await agent.client.runs.create(
                None, "demo", input=user("@sleep 1 @say done"), on_completion="keep"
            )
            for _ in range(3)
        ]

        async def metrics() -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
            async with httpx.AsyncClient(base_url=agent.url) as http:
                found = samples((await http.get("/metrics")).text)
            return found if found[("agentctl_runs_executing", ())] == 2 else None

        found = await eventually(metrics, what="two runs executing")
        assert found[("agentctl_max_runs", ())] == 2
        assert found[("agentctl_run_queue_depth", ())] == 1
        assert found[("agentctl_runs", (("status", "running"),))] == 2
        for run in runs:
            await agent.client.runs.join(run["thread_id"], run["run_id"])
        statuses = [
            (await agent.client.runs.get(run["thread_id"], run["run_id"]))["status"] for run in runs
        ]
        assert statuses == ["success"] * 3


@pytest.mark.postgres
@pytest.mark.redis
async def test_runs_waiting_for_their_model_share_a_small_postgres_pool(
    request: pytest.FixtureRequest, demo: Path, tmp_path: Path
) -> None:
    """A run checks a PostgreSQL connection out for each statement only, never while it
    waits for its model: 100 runs in flight at once on a pool of 8 connections all finish."""
    count = 100
    async with postgres_opener(request) as open_postgres:
        storage = await open_postgres(request.getfixturevalue("database_url"))
        # Admission at a fixed `max_runs` (no lag limit): all 100 run at once.
        async with running_server(demo, tmp_path / "data", storage=storage, max_lag=None) as agent:
            runs = await asyncio.gather(
                *(
                    agent.client.runs.create(
                        None, "demo", input=user("@sleep 10 @say done"), on_completion="keep"
                    )
                    for _ in range(count)
                )
            )

            async def all_running() -> bool:
                return (await storage.runs.count_by_status()).get("running") == count

            await eventually(all_running, 30, what=f"{count} runs running at once")
            for run in runs:
                await agent.client.runs.join(run["thread_id"], run["run_id"])
            assert await storage.runs.count_by_status() == {"success": count}


@pytest.mark.postgres
@pytest.mark.redis
async def test_a_stateless_run_on_postgres_leaves_nothing_behind(
    request: pytest.FixtureRequest, demo: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its thread, checkpoints and run go once it ended: deleting them is not a write of the
    run's attempt (whose row goes first), so nothing refuses it."""
    async with postgres_opener(request) as open_postgres:
        storage = await open_postgres(request.getfixturevalue("database_url"))
        async with running_server(demo, tmp_path / "data", storage=storage) as agent:
            values = await agent.client.runs.wait(None, "demo", input=user("@say done"))
            assert isinstance(values, dict)
            assert values["messages"][-1]["content"] == "done"

            async def nothing_left() -> bool:
                async with storage.pool.connection() as conn:
                    cursor = await conn.execute("SELECT count(*) AS n FROM checkpoints")
                    left = (await cursor.fetchone())["n"]  # type: ignore[index]
                return left == 0 and await storage.runs.count_by_status() == {}

            await eventually(nothing_left, 10, "the stateless run's records to go")
    assert "lost the run" not in caplog.text


async def test_a_deletion_during_a_stop_ends_the_grace_at_once(agent: Running) -> None:
    """A replica stopping (SIGTERM) gives its runs a grace; the agent deleted meanwhile,
    they stop at once, not when the grace ends."""
    server = agent.server
    thread_id = new_thread_id()
    run = await agent.client.runs.create(
        thread_id, "demo", input=user("@sleep 30 @say late"), if_not_exists="create"
    )

    async def status_is(expected: str) -> bool:
        found = await server.storage.runs.get(run["run_id"])
        assert found is not None
        return found.status == expected

    await eventually(partial(status_is, "running"), 10, "the run to start")
    server.shutdown_grace = 60.0
    server.begin_stopping()
    await asyncio.sleep(0.3)
    assert await status_is("running")  # in its grace
    server.begin_deleting()
    await eventually(partial(status_is, "pending"), 10, "the run to be handed back")
