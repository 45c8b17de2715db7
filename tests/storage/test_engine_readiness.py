"""The run engine on both backends before its revision arrives (a new agent of a platform,
on a replica the deploy has not reached yet): it claims no run, and takes them once it
has the revision."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentctl.engine import Deployment, RunEngine
from agentctl.project import load_project
from agentctl.runtime import load_agent
from agentctl.storage.base import Run, Storage, Thread, new_id
from agentctl.testing import ScriptedModelServer
from tests.conftest import eventually
from tests.server.conftest import user


async def test_an_engine_without_a_revision_leaves_runs_pending(
    storage: Storage, demo: Path, model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in model_server.env.items():
        monkeypatch.setenv(name, value)
    deployment = Deployment(None)
    engine = RunEngine(storage, deployment)
    await engine.start()
    try:
        thread_id = new_id()
        await storage.threads.create(Thread(thread_id))
        run = Run(new_id(), thread_id, "agent", kwargs={"input": user("@say hello")})
        await engine.submit(run)

        async def status() -> str | None:
            found = await storage.runs.get(run.run_id)
            return None if found is None else found.status

        await asyncio.sleep(0.5)  # time for a dispatcher to claim it, were it to
        assert await status() == "pending"

        runtime = await load_agent(
            load_project(demo), "rev-1", store=storage.store, checkpointer=storage.checkpointer
        )
        deployment.swap(runtime, 1)
        engine.wake()

        async def succeeded() -> bool:
            return await status() == "success"

        await eventually(succeeded, 15, "the run to succeed")
    finally:
        await engine.stop()
