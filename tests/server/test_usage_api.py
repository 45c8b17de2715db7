"""What runs spent, through the API: a run's `usage` on its record (read with the official
SDK), its trace, `GET /usage` summed per day, user, model and thread with each signed-in
user seeing their own only, and `GET /platform/usage` across a platform's agents."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from langgraph_sdk.errors import APIStatusError

from agentctl.metering import prices
from agentctl.server.platform_host import Platform
from agentctl.testing import ScriptedModelServer
from agentctl.testing.server import Reported
from tests.server.conftest import (
    ALICE,
    BOB,
    PLATFORM_OPERATOR,
    Running,
    TwoUsers,
    call,
    deploy,
    running_server,
    user,
)
from tests.server.test_peers import wait

MODEL = "openai:scripted"
# Dollars per million tokens, from the operator's prices file.
INPUT, OUTPUT, CACHED = 2.0, 8.0, 0.5
KEYS = ("input_tokens", "output_tokens", "cached_tokens", "total_tokens", "model_calls")
DEPLOY_KEY = "deploy-key-usage"
TODAY = datetime.now(UTC).date().isoformat()


@pytest.fixture(autouse=True)
def priced(tmp_path: Path) -> Iterator[None]:
    path = tmp_path / "prices.toml"
    path.write_text(f'["{MODEL}"]\ninput = {INPUT}\noutput = {OUTPUT}\ncached = {CACHED}\n')
    prices.configure(path)
    yield
    prices._current = None


def sums(reported: list[Reported]) -> dict[str, Any]:
    counts = {
        "input_tokens": sum(r.usage.input for r in reported),
        "output_tokens": sum(r.usage.output for r in reported),
        "cached_tokens": sum(r.usage.cached for r in reported),
        "total_tokens": sum(r.usage.total for r in reported),
        "model_calls": len(reported),
    }
    fresh = counts["input_tokens"] - counts["cached_tokens"]
    cost = fresh * INPUT + counts["cached_tokens"] * CACHED + counts["output_tokens"] * OUTPUT
    return {**counts, "cost_usd": cost / 1e6}


def counts(usage: dict[str, Any]) -> dict[str, Any]:
    return {key: usage[key] for key in (*KEYS, "cost_usd")}


def approx(expected: dict[str, Any]) -> dict[str, Any]:
    return {**expected, "cost_usd": pytest.approx(expected["cost_usd"])}


async def test_a_run_shows_its_usage_and_its_trace(
    agent: Running, http: httpx.AsyncClient, model_server: ScriptedModelServer
) -> None:
    client = agent.client
    thread_id = (await client.threads.create())["thread_id"]
    before = len(model_server.reported)
    script = call("add", a=2, b=3) + "\n@say sum {last_tool_result}"
    await client.runs.wait(thread_id, "demo", input=user(script))
    reported = model_server.reported[before:]
    assert len(reported) == 2
    [run] = await client.runs.list(thread_id)
    expected = sums(reported)

    # The SDK reads the record as it is: `usage` is one more key of its Run.
    got = cast(dict[str, Any], await client.runs.get(thread_id, run["run_id"]))
    usage = got["usage"]
    assert counts(usage) == approx(expected)
    assert counts(usage["models"][MODEL]) == approx(expected)
    assert "unpriced_models" not in usage
    assert cast(dict[str, Any], run)["usage"] == usage
    selected = await http.get(f"/threads/{thread_id}/runs", params={"select": ["run_id", "usage"]})
    assert selected.json() == [{"run_id": run["run_id"], "usage": usage}]

    answer = await http.get(f"/threads/{thread_id}/runs/{run['run_id']}/trace")
    assert answer.status_code == 200, answer.text
    trace = answer.json()
    assert trace["run_id"] == run["run_id"]
    assert not trace["truncated"]
    steps = trace["steps"]
    assert [(s["kind"], s["name"]) for s in steps] == [
        ("model", MODEL),
        ("mcp", "calc/add"),
        ("model", MODEL),
    ]
    assert [s["input_tokens"] for s in steps if s["kind"] == "model"] == [
        r.usage.input for r in reported
    ]
    assert all(s["duration_ms"] >= 0 for s in steps)

    # As for the run: 404 for another thread's path or an unknown run.
    other = (await client.threads.create())["thread_id"]
    for path in (
        f"/threads/{other}/runs/{run['run_id']}/trace",
        f"/threads/{thread_id}/runs/{uuid.uuid4()}/trace",
    ):
        missing = await http.get(path)
        assert missing.status_code == 404
        assert "not found" in missing.json()["detail"]

    # A run still running has no trace yet.
    slow = await client.runs.create(thread_id, "demo", input=user("@sleep 30 @say late"))
    early = await http.get(f"/threads/{thread_id}/runs/{slow['run_id']}/trace")
    assert early.status_code == 404
    assert "stored when the run ends" in early.json()["detail"]
    assert cast(dict[str, Any], slow)["usage"] is None
    await client.runs.cancel(thread_id, slow["run_id"], wait=True)

    # Deleting the run deletes its trace; what it spent is still counted.
    await client.runs.delete(thread_id, run["run_id"])
    answer = await http.get("/usage", params={"group_by": "thread"})
    assert answer.status_code == 200, answer.text
    [row] = [row for row in answer.json()["rows"] if row["key"] == thread_id]
    assert row["input_tokens"] >= expected["input_tokens"]


async def test_with_metering_off_runs_store_no_usage_and_no_trace(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTCTL_METERING", "false")
    async with running_server(demo, tmp_path / "data") as running:
        client = running.client
        thread_id = (await client.threads.create())["thread_id"]
        await client.runs.wait(thread_id, "demo", input=user("@say hello"))
        [run] = await client.runs.list(thread_id)
        assert cast(dict[str, Any], run)["usage"] is None
        async with httpx.AsyncClient(base_url=running.url) as http:
            trace = await http.get(f"/threads/{thread_id}/runs/{run['run_id']}/trace")
            assert trace.status_code == 404
            answer = await http.get("/usage")
            assert answer.status_code == 200, answer.text
            assert answer.json()["rows"] == []


async def test_usage_summed_per_day_user_model_and_thread(
    two_users: TwoUsers, model_server: ScriptedModelServer
) -> None:
    server = two_users.running.server
    server.access = replace(server.access, api_key=DEPLOY_KEY)  # the key, as serve has it
    alice, bob = two_users.alice, two_users.bob
    spent: dict[str, list[Reported]] = {ALICE: [], BOB: []}
    threads: dict[str, str] = {}
    for who, client, runs in ((ALICE, alice, 2), (BOB, bob, 1)):
        thread_id = (await client.threads.create())["thread_id"]
        threads[who] = thread_id
        for number in range(runs):
            before = len(model_server.reported)
            await client.runs.wait(thread_id, "demo", input=user(f"@say {who} {number}"))
            spent[who] += model_server.reported[before:]
    [alices_run, _] = await alice.runs.list(threads[ALICE])

    idp = two_users.idp
    as_alice = {"Authorization": f"Bearer {idp.mint(ALICE)}"}
    operator = {"x-api-key": DEPLOY_KEY}
    async with httpx.AsyncClient(base_url=two_users.running.url) as http:

        async def usage(headers: dict[str, str], **params: str) -> dict[str, Any]:
            answer = await http.get("/usage", params=params, headers=headers)
            assert answer.status_code == 200, answer.text
            body: dict[str, Any] = answer.json()
            return body

        everyone = sums(spent[ALICE] + spent[BOB])
        by_user = await usage(operator, group_by="user")
        assert by_user["group_by"] == "user"
        assert by_user["until"] == TODAY
        since = datetime.now(UTC).date() - timedelta(days=29)
        assert by_user["since"] == since.isoformat()  # the last 30 days
        assert [row["key"] for row in by_user["rows"]] == sorted([ALICE, BOB])
        for row in by_user["rows"]:
            assert counts(row) == approx(sums(spent[row["key"]]))
        assert [row["runs"] for row in by_user["rows"]] == [2, 1]
        assert counts(by_user["total"]) == approx(everyone)
        assert by_user["total"]["runs"] == 3
        assert by_user["unpriced_models"] == []

        by_model = await usage(operator, group_by="model", since=TODAY, until=TODAY)
        [row] = by_model["rows"]
        assert (row["key"], row["runs"]) == (MODEL, 3)
        assert counts(row) == approx(everyone)
        [day] = (await usage(operator, group_by="day"))["rows"]
        assert (day["key"], day["runs"]) == (TODAY, 3)
        by_thread = await usage(operator, group_by="thread")
        assert {row["key"]: row["runs"] for row in by_thread["rows"]} == {
            threads[ALICE]: 2,
            threads[BOB]: 1,
        }
        just_bob = await usage(operator, user_id=BOB)
        assert just_bob["rows"] == [{"key": None, **just_bob["total"]}]
        assert counts(just_bob["total"]) == approx(sums(spent[BOB]))
        on_thread = await usage(operator, thread_id=threads[ALICE])
        assert on_thread["total"]["runs"] == 2

        # A signed-in user sees their own usage only.
        hers = await usage(as_alice, group_by="user")
        assert [row["key"] for row in hers["rows"]] == [ALICE]
        assert hers["user_id"] == ALICE
        assert counts(hers["total"]) == approx(sums(spent[ALICE]))
        assert (await usage(as_alice, user_id=ALICE))["total"]["runs"] == 2
        assert (await usage(as_alice, thread_id=threads[BOB]))["total"]["runs"] == 0
        refused = await http.get("/usage", params={"user_id": BOB}, headers=as_alice)
        assert refused.status_code == 403
        assert "own usage" in refused.json()["detail"]
        # ... and the traces of their own runs only.
        path = f"/threads/{threads[ALICE]}/runs/{alices_run['run_id']}/trace"
        assert (await http.get(path, headers=as_alice)).status_code == 200
        as_bob = {"Authorization": f"Bearer {idp.mint(BOB)}"}
        assert (await http.get(path, headers=as_bob)).status_code == 404
        assert (await http.get(path, headers=operator)).status_code == 200
        with pytest.raises(APIStatusError) as hidden:
            await bob.runs.get(threads[ALICE], alices_run["run_id"])
        assert hidden.value.status_code == 404
        assert (await http.get("/usage")).status_code == 401

        # Other days hold nothing.
        yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
        old = await usage(operator, group_by="user", since=yesterday, until=yesterday)
        assert old["rows"] == []
        assert old["total"]["runs"] == 0
        assert old["total"]["cost_usd"] is None

        # Values the API cannot take: 422 naming the parameter.
        for params, named in (
            ({"group_by": "agent"}, "group_by"),
            ({"group_by": "hour"}, "group_by"),
            ({"since": "last week"}, "since"),
            ({"until": "2026-13-01"}, "until"),
            ({"since": TODAY, "until": yesterday}, "since"),
            ({"since": "2000-01-01", "until": TODAY}, "since"),
        ):
            answer = await http.get("/usage", params=params, headers=operator)
            assert answer.status_code == 422, (params, answer.text)
            assert named in answer.json()["detail"], answer.text


async def test_platform_usage_sums_every_agent(
    platform: tuple[Platform, httpx.AsyncClient], tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    _, http = platform
    spent: dict[str, list[Reported]] = {"alpha": [], "beta": []}
    for name in spent:
        await deploy(http, tmp_path / name, name, model_server, f"You are {name}.")
    for name, runs in (("alpha", 2), ("beta", 1)):
        for number in range(runs):
            before = len(model_server.reported)
            # Stateless runs: their temporary threads are deleted, what they spent is kept.
            await wait(http, name, {"input": user(f"@say {name} {number}")}, PLATFORM_OPERATOR)
            spent[name] += model_server.reported[before:]

    async def usage(**params: str) -> dict[str, Any]:
        answer = await http.get("/platform/usage", params=params, headers=PLATFORM_OPERATOR)
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body

    everyone = sums(spent["alpha"] + spent["beta"])
    by_agent = await usage(group_by="agent")
    assert [(row["key"], row["runs"]) for row in by_agent["rows"]] == [("alpha", 2), ("beta", 1)]
    for row in by_agent["rows"]:
        assert counts(row) == approx(sums(spent[row["key"]]))
    assert counts(by_agent["total"]) == approx(everyone)
    assert by_agent["total"]["runs"] == 3
    [model] = (await usage(group_by="model"))["rows"]
    assert (model["key"], model["runs"]) == (MODEL, 3)
    assert counts(model) == approx(everyone)
    [day] = (await usage(group_by="day", since=TODAY))["rows"]
    assert (day["key"], day["runs"]) == (TODAY, 3)
    [nobody] = (await usage(group_by="user"))["rows"]  # the operator's runs: no user
    assert (nobody["key"], nobody["runs"]) == (None, 3)
    # Each agent's own /usage has its own runs only.
    alpha = await http.get("/agents/alpha/usage", headers=PLATFORM_OPERATOR)
    assert alpha.json()["total"]["runs"] == 2

    assert (await http.get("/platform/usage")).status_code == 401
    wrong = await http.get("/platform/usage", params={"group_by": "thread"},
                           headers=PLATFORM_OPERATOR)  # fmt: skip
    assert wrong.status_code == 422
    assert "group_by" in wrong.json()["detail"]


async def test_the_openapi_document_tells_usage_and_traces(http: httpx.AsyncClient) -> None:
    doc = (await http.get("/openapi.json")).json()
    schemas = doc["components"]["schemas"]
    assert "usage" in schemas["RunOut"]["properties"]
    usage = doc["paths"]["/usage"]["get"]
    params = {p["name"]: p for p in usage["parameters"]}
    assert set(params) == {"group_by", "since", "until", "user_id", "thread_id"}
    assert {"200", "401", "403", "422"} <= set(usage["responses"])
    trace = doc["paths"]["/threads/{thread_id}/runs/{run_id}/trace"]["get"]
    assert {"200", "404"} <= set(trace["responses"])
    assert "TraceOut" in schemas
    assert "UsageOut" in schemas


async def test_a_span_reaching_before_the_first_day_is_taken_not_a_500(
    http: httpx.AsyncClient,
) -> None:
    # The default span (30 days back from `until`) starts at the calendar's first day.
    answer = await http.get("/usage", params={"until": "0001-01-05"})
    assert answer.status_code == 200, answer.text
    assert (answer.json()["since"], answer.json()["until"]) == ("0001-01-01", "0001-01-05")
