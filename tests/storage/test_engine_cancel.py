"""A cancel that lands while a run is being set up (its thread's row held by another
transaction, so marking the thread busy waits) still ends the run: it is recorded as
interrupted, never left `running` for another attempt to execute again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
import pytest

from agentctl.engine import Deployment, RunEngine
from agentctl.project import load_project
from agentctl.runtime import load_agent
from agentctl.storage.base import Run, Thread, new_id
from agentctl.testing import ScriptedModelServer
from tests.conftest import eventually
from tests.server.conftest import user
from tests.storage.conftest import OpenPostgres


async def test_a_cancel_during_set_up_records_the_run_interrupted(
    database_url: str,
    open_postgres: OpenPostgres,
    demo: Path,
    model_server: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in model_server.env.items():
        monkeypatch.setenv(name, value)
    storage = await open_postgres(database_url)
    runtime = await load_agent(
        load_project(demo), "rev-1", store=storage.store, checkpointer=storage.checkpointer
    )
    engine = RunEngine(storage, Deployment(runtime))
    calls = model_server.requests  # the server is shared with other tests
    await engine.start()
    thread_id = new_id()
    await storage.threads.create(Thread(thread_id))
    holder = await psycopg.AsyncConnection.connect(database_url)
    try:
        await holder.execute("SELECT 1 FROM threads WHERE thread_id = %s FOR UPDATE", [thread_id])
        run = Run(new_id(), thread_id, "agent", kwargs={"input": user("@say never")})
        await engine.submit(run)

        async def claimed() -> bool:
            found = await storage.runs.get(run.run_id)
            return found is not None and found.status == "running"

        await eventually(claimed, 15, "the run to be claimed")
        await asyncio.sleep(0.3)  # its set-up waits on the thread's row
        cancelling = asyncio.create_task(engine.cancel_and_wait([run]))
        await asyncio.sleep(0.3)
        await holder.rollback()  # the row is free: the run records how it ended
        await asyncio.wait_for(cancelling, 10)
        ended = await storage.runs.get(run.run_id)
        assert ended is not None
        assert ended.status == "interrupted"
        thread = await storage.threads.get(thread_id)
        assert thread is not None
        assert thread.status != "busy"
        assert model_server.requests == calls, "a cancelled run called its model"
    finally:
        await holder.close()
        await engine.stop()
