"""Crons through the official SDK, and the scheduler that fires them."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from agentctl.engine import assistant_uuid
from agentctl.storage.base import Run
from tests.conftest import eventually
from tests.server.conftest import UNKNOWN_ID, Running, assert_json_error, error_detail, user

EVERY_SECOND = "* * * * * *"  # croniter: a sixth field is the seconds
NEVER_SOON = "0 0 1 1 *"


@pytest.fixture
def submitted(agent: Running) -> list[Run]:
    """Every run the scheduler submits to the (real) engine."""
    runs: list[Run] = []
    engine = agent.server.engine
    submit = engine.submit

    async def spy(run: Run) -> Run:
        runs.append(run)
        return await submit(run)

    engine.submit = spy  # type: ignore[method-assign]
    return runs


# The SDK types a created cron as a Run and its dates as datetimes: the server sends a cron,
# with ISO dates, so the crons and dates below are `Any` (JSON) here.
def parse(value: Any) -> datetime:
    return datetime.fromisoformat(value)


async def test_create_get_search_count(agent: Running, http: httpx.AsyncClient) -> None:
    crons = agent.client.crons
    thread = await agent.client.threads.create()
    stateless: Any = await crons.create(
        "demo", schedule=NEVER_SOON, input=user("tick"), metadata={"team": "a"}
    )
    assert uuid.UUID(stateless["cron_id"])
    assert stateless["assistant_id"] == assistant_uuid("demo")
    assert stateless["thread_id"] is None
    assert stateless["schedule"] == NEVER_SOON
    assert stateless["on_run_completed"] == "delete"
    assert stateless["enabled"] is True
    assert stateless["metadata"] == {"team": "a"}
    assert stateless["payload"]["input"] == user("tick")
    next_run = parse(stateless["next_run_date"])
    assert next_run > datetime.now(UTC)
    assert (next_run.month, next_run.day, next_run.hour, next_run.minute) == (1, 1, 0, 0)

    on_thread: Any = await crons.create_for_thread(
        thread["thread_id"], "demo", schedule="30 9 * * *", timezone="America/New_York",
        multitask_strategy="reject", enabled=False,
    )  # fmt: skip
    assert on_thread["thread_id"] == thread["thread_id"]
    assert on_thread["timezone"] == "America/New_York"
    assert on_thread["on_run_completed"] is None
    assert on_thread["enabled"] is False
    assert on_thread["payload"]["multitask_strategy"] == "reject"
    assert (await http.get(f"/runs/crons/{on_thread['cron_id']}")).json() == on_thread

    assert await crons.count() == 2
    assert await crons.count(assistant_id="demo") == 2
    assert await crons.count(thread_id=thread["thread_id"]) == 1
    assert await crons.count(metadata={"team": "a"}) == 1
    assert [c["cron_id"] for c in await crons.search(enabled=False)] == [on_thread["cron_id"]]
    ordered = await crons.search(sort_by="created_at", sort_order="asc")
    assert [c["cron_id"] for c in ordered] == [stateless["cron_id"], on_thread["cron_id"]]
    slim = await crons.search(thread_id=thread["thread_id"], select=["cron_id", "schedule"])
    assert slim == [{"cron_id": on_thread["cron_id"], "schedule": "30 9 * * *"}]
    page = await http.post("/runs/crons/search", json={"limit": 1})
    assert page.headers["X-Pagination-Total"] == "2"
    assert page.headers["X-Pagination-Next"] == "1"


async def test_a_timezone_moves_the_next_date(agent: Running) -> None:
    utc: Any = await agent.client.crons.create("demo", schedule="0 9 * * *")
    tokyo: Any = await agent.client.crons.create(
        "demo", schedule="0 9 * * *", timezone="Asia/Tokyo"
    )
    assert parse(utc["next_run_date"]).hour == 9
    assert parse(tokyo["next_run_date"]).astimezone(UTC).hour == 0  # 09:00 JST


async def test_patch_and_delete(agent: Running) -> None:
    crons = agent.client.crons
    cron: Any = await crons.create("demo", schedule=NEVER_SOON, metadata={"a": 1}, input=user("x"))
    end = datetime.now(UTC) + timedelta(days=400)
    patched: Any = await crons.update(
        cron["cron_id"], schedule="15 * * * *", metadata={"b": 2}, end_time=end,
        input=user("y"), on_run_completed="keep",
    )  # fmt: skip
    assert patched["schedule"] == "15 * * * *"
    assert parse(patched["next_run_date"]).minute == 15
    assert parse(patched["next_run_date"]) - datetime.now(UTC) <= timedelta(hours=1)
    assert patched["metadata"] == {"a": 1, "b": 2}
    assert patched["payload"]["metadata"] == {"a": 1, "b": 2}
    assert patched["payload"]["input"] == user("y")
    assert parse(patched["end_time"]) == end
    assert patched["on_run_completed"] == "keep"
    assert parse(patched["updated_at"]) >= parse(cron["updated_at"])

    cleared = await crons.update(cron["cron_id"], end_time=None, enabled=False)
    assert cleared["end_time"] is None
    assert cleared["enabled"] is False
    assert (await crons.update(cron["cron_id"], enabled=True))["enabled"] is True

    await crons.delete(cron["cron_id"])
    assert await crons.count() == 0
    with pytest.raises(NotFoundError):
        await crons.delete(cron["cron_id"])
    with pytest.raises(NotFoundError):
        await crons.update(cron["cron_id"], schedule="* * * * *")


async def test_bad_schedules_and_references(agent: Running) -> None:
    crons = agent.client.crons
    with pytest.raises(UnprocessableEntityError) as bad:
        await crons.create("demo", schedule="every monday")
    assert "not a valid cron expression" in error_detail(bad)
    with pytest.raises(UnprocessableEntityError) as out_of_range:
        await crons.create("demo", schedule="61 * * * *")
    assert "61 * * * *" in error_detail(out_of_range)
    with pytest.raises(UnprocessableEntityError) as zone:
        await crons.create("demo", schedule="* * * * *", timezone="Mars/Olympus")
    assert "timezone 'Mars/Olympus'" in error_detail(zone)
    with pytest.raises(NotFoundError):
        await crons.create(str(uuid.uuid4()), schedule="* * * * *")
    with pytest.raises(NotFoundError):
        await crons.create_for_thread(str(uuid.uuid4()), "demo", schedule="* * * * *")
    cron: Any = await crons.create("demo", schedule=NEVER_SOON)
    with pytest.raises(UnprocessableEntityError):
        await crons.update(cron["cron_id"], schedule="* * *")
    assert await crons.count() == 1


async def test_a_thread_cron_runs_on_its_thread(agent: Running, submitted: list[Run]) -> None:
    thread = await agent.client.threads.create()
    thread_id = thread["thread_id"]
    cron: Any = await agent.client.crons.create_for_thread(
        thread_id, "demo", schedule=EVERY_SECOND, input=user("ping"), metadata={"from": "cron"}
    )

    async def answered() -> Any:
        values = (await agent.client.threads.get(thread_id))["values"]
        return values and len(values["messages"]) >= 2

    await eventually(answered)
    await agent.client.crons.delete(cron["cron_id"])
    assert submitted
    assert all(run.thread_id == thread_id and not run.temporary for run in submitted)
    runs = await agent.client.runs.list(thread_id)
    assert runs
    assert (runs[-1]["metadata"] or {}).get("from") == "cron"
    values: Any = (await agent.client.threads.get(thread_id))["values"]
    assert [m["content"] for m in values["messages"][:2]] == ["ping", "scripted reply to: ping"]
    # Deleted: no more runs.
    count = len(submitted)
    await asyncio.sleep(1.5)
    assert len(submitted) == count


async def test_a_stateless_cron_runs_on_new_threads(agent: Running, submitted: list[Run]) -> None:
    cron: Any = await agent.client.crons.create(
        "demo", schedule=EVERY_SECOND, input=user("hello"), on_run_completed="keep"
    )

    async def kept() -> Any:
        found = await agent.client.threads.search(metadata={"cron_id": cron["cron_id"]})
        return [t for t in found if t["values"] and len(t["values"]["messages"]) == 2]

    threads = await eventually(kept)
    await agent.client.crons.update(cron["cron_id"], enabled=False)
    assert threads[0]["values"]["messages"][1]["content"] == "scripted reply to: hello"
    assert threads[0]["metadata"]["assistant_id"] == assistant_uuid("demo")
    assert all(not run.temporary for run in submitted)
    assert len({run.thread_id for run in submitted}) == len(submitted)  # a new thread each


async def test_a_stateless_cron_deletes_its_threads(agent: Running, submitted: list[Run]) -> None:
    cron: Any = await agent.client.crons.create("demo", schedule=EVERY_SECOND, input=user("gone"))

    async def fired() -> bool:
        return bool(submitted)

    await eventually(fired)
    await agent.client.crons.delete(cron["cron_id"])
    first = submitted[0]
    assert first.temporary

    async def cleaned() -> bool:
        return await agent.server.storage.threads.get(first.thread_id) is None

    await eventually(cleaned)


async def test_a_cron_stops_at_its_end_time(agent: Running, submitted: list[Run]) -> None:
    end = datetime.now(UTC) + timedelta(seconds=1.5)
    cron: Any = await agent.client.crons.create(
        "demo", schedule=EVERY_SECOND, input=user("until"), end_time=end
    )

    async def disabled() -> Any:
        current = (await agent.client.crons.search())[0]
        return not current["enabled"] and current

    finished = await eventually(disabled)
    assert finished["cron_id"] == cron["cron_id"]
    assert finished["next_run_date"] is None
    assert 1 <= len(submitted) <= 2
    count = len(submitted)
    await asyncio.sleep(1.2)
    assert len(submitted) == count


async def test_deleting_a_thread_deletes_its_crons(agent: Running) -> None:
    thread = await agent.client.threads.create()
    await agent.client.crons.create_for_thread(thread["thread_id"], "demo", schedule=NEVER_SOON)
    assert await agent.client.crons.count(thread_id=thread["thread_id"]) == 1
    await agent.client.threads.delete(thread["thread_id"])
    assert await agent.client.crons.count() == 0


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "detail"),
    [
        ("POST", "/runs/crons", b"{nope", 422, "not valid JSON"),
        ("POST", "/runs/crons", b'{"assistant_id": "demo"}', 422, "schedule"),
        ("POST", "/runs/crons", b'{"schedule": "* * * * *"}', 422, "assistant_id"),
        ("POST", "/runs/crons", b'{"schedule": 5, "assistant_id": "demo"}', 422, "schedule"),
        (
            "POST",
            "/runs/crons",
            b'{"schedule": "* * * * *", "assistant_id": "demo", "end_time": "tomorrow"}',
            422,
            "end_time",
        ),
        (
            "POST",
            "/runs/crons",
            b'{"schedule": "* * * * *", "assistant_id": "demo", "stream_mode": "everything"}',
            422,
            "stream_mode",
        ),
        (
            "POST",
            "/runs/crons",
            b'{"schedule": "* * * * *", "assistant_id": "demo", "on_run_completed": "archive"}',
            422,
            "on_run_completed",
        ),
        (
            "POST",
            "/threads/not-a-uuid/runs/crons",
            b'{"schedule": "* * * * *", "assistant_id": "demo"}',
            422,
            "not a UUID",
        ),
        ("POST", "/runs/crons/search", b'{"sort_by": "mood"}', 422, "sort_by"),
        ("GET", f"/runs/crons/{UNKNOWN_ID}", b"", 404, "not found"),
        ("GET", "/runs/crons/not-a-uuid", b"", 422, "not a UUID"),
        ("PATCH", f"/runs/crons/{UNKNOWN_ID}", b"{}", 404, "not found"),
        ("DELETE", "/runs/crons/xyz", b"", 422, "not a UUID"),
    ],
)
async def test_malformed_requests(
    http: httpx.AsyncClient, method: str, path: str, body: bytes, status: int, detail: str
) -> None:
    await assert_json_error(http, method, path, body, status, detail)
    ok = await http.post(
        "/runs/crons", json={"schedule": NEVER_SOON, "assistant_id": "demo", "colour": "red"}
    )
    assert ok.status_code == 200
