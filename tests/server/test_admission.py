"""Admission: a replica executes as many runs at once as its event loop keeps up with."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from agentctl.engine.admission import FLOOR, Admission, max_lag_setting
from tests.conftest import eventually
from tests.server.conftest import running_server, user
from tests.server.test_system import samples

LAGGING = 0.05  # seconds: well over the default lag limit (10 ms)


async def test_a_lagging_loop_shrinks_the_limit_to_the_floor_never_below() -> None:
    admission = Admission(max_runs=100, max_lag=0.01)
    admission.limit = 40
    for _ in range(30):
        admission.observe(LAGGING)
    assert admission.limit == FLOOR


async def test_a_cut_waits_until_the_runs_in_flight_have_come_down_to_it() -> None:
    admission = Admission(max_runs=100, max_lag=0.01)
    admission.limit = 20
    for _ in range(20):
        await admission.acquire()
    admission.observe(LAGGING)
    assert admission.limit == 18
    admission.observe(LAGGING)  # 20 still in flight: the cut has not taken effect yet
    assert admission.limit == 18
    admission.release()
    admission.release()
    admission.observe(LAGGING)
    assert admission.limit == 17


async def test_the_limit_doubles_while_it_holds_runs_back_and_the_loop_keeps_up() -> None:
    admission = Admission(max_runs=50, max_lag=0.01)
    assert admission.limit == FLOOR
    for _ in range(FLOOR):
        await admission.acquire()
    waiting = asyncio.ensure_future(admission.acquire())
    await asyncio.sleep(0)
    assert not waiting.done()  # held back
    admission.observe(0.004)  # under half the lag limit: doubles
    await asyncio.wait_for(waiting, 1)
    assert admission.limit == 2 * FLOOR
    for _ in range(admission.limit - admission.executing):
        await admission.acquire()
    waiting = asyncio.ensure_future(admission.acquire())
    await asyncio.sleep(0)
    admission.observe(0.008)  # under the limit, over half of it: one more
    await asyncio.wait_for(waiting, 1)
    assert admission.limit == 2 * FLOOR + 1
    admission.observe(0.0)  # nothing held back: the limit stays
    assert admission.limit == 2 * FLOOR + 1


async def test_the_limit_never_passes_max_runs() -> None:
    admission = Admission(max_runs=12, max_lag=0.01)
    for _ in range(5):
        while admission.executing < admission.limit:
            await admission.acquire()
        waiting = asyncio.ensure_future(admission.acquire())
        await asyncio.sleep(0)
        admission.observe(0.0)
        await asyncio.sleep(0)
        waiting.cancel()
    assert admission.limit == 12


async def test_without_a_lag_limit_max_runs_are_admitted_whatever_the_lag() -> None:
    admission = Admission(max_runs=30, max_lag=max_lag_setting(0))
    assert admission.max_lag is None
    admission.observe(1.0)
    for _ in range(30):
        await asyncio.wait_for(admission.acquire(), 1)
    assert admission.limit == 30
    assert max_lag_setting(10) == 0.01


@contextlib.asynccontextmanager
async def lagging_loop() -> AsyncIterator[None]:
    """Make this event loop lag: a task that holds it `LAGGING` seconds at a time."""

    async def hog() -> None:
        while True:
            time.sleep(LAGGING)
            await asyncio.sleep(0)

    task = asyncio.create_task(hog())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.mark.slow
async def test_while_the_loop_lags_runs_wait_pending_and_all_finish_once_it_keeps_up(
    demo: Path, tmp_path: Path
) -> None:
    """A replica whose loop lags executes no more than the floor of runs at once; the others
    wait, pending, in storage. Once the loop keeps up, more start at once, and every run
    finishes."""
    count = 3 * FLOOR
    async with running_server(demo, tmp_path / "data", max_runs=100) as agent:
        admission = agent.server.engine.admission
        storage = agent.server.storage
        async with lagging_loop():
            runs = await asyncio.gather(
                *(
                    agent.client.runs.create(
                        None, "demo", input=user("@sleep 6 @say done"), on_completion="keep"
                    )
                    for _ in range(count)
                )
            )

            async def floor_executing() -> bool:
                return admission.executing == FLOOR

            await eventually(floor_executing, what="the floor of runs executing")
            most = 0
            for _ in range(10):  # for a while: never more than the floor
                counts = await storage.runs.count_by_status()
                most = max(most, admission.executing, counts.get("running", 0))
                await asyncio.sleep(0.1)
            assert most == FLOOR
            counts = await storage.runs.count_by_status()
            assert counts.get("pending", 0) > 0  # the others wait, pending, in storage
            assert sum(counts.values()) == count
            assert admission.limit == FLOOR
            async with httpx.AsyncClient(base_url=agent.url) as http:
                found = samples((await http.get("/metrics")).text)
            assert found[("agentctl_run_admission_limit", ())] == FLOOR
            assert found[("agentctl_event_loop_lag_seconds", ())] > 0.01
            assert found[("agentctl_max_runs", ())] == 100

        async def more_than_the_floor() -> bool:
            return admission.executing > FLOOR

        await eventually(more_than_the_floor, what="more runs at once once the loop keeps up")
        for run in runs:
            await agent.client.runs.join(run["thread_id"], run["run_id"])
        assert await storage.runs.count_by_status() == {"success": count}
