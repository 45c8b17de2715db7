"""Liveness, server facts and metrics."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from agentctl import __version__
from agentctl.engine import assistant_uuid
from tests.server.conftest import Running, user


async def test_ok(http: httpx.AsyncClient) -> None:
    response = await http.get("/ok")
    assert response.status_code == 200
    assert response.json() == {"ok": True}


async def test_info(http: httpx.AsyncClient) -> None:
    info = (await http.get("/info")).json()
    assert info["version"] == __version__
    assert info["graph"] == "demo"
    assert info["assistant_id"] == assistant_uuid("demo")
    assert info["revision"] == "rev-1"
    assert info["storage"] == "sqlite"
    assert info["langgraph_py_version"]
    assert info["flags"]["assistants"] is True
    assert info["flags"]["crons"] is True


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def test_metrics(agent: Running, http: httpx.AsyncClient) -> None:
    thread = await agent.client.threads.create()
    await agent.client.runs.wait(thread["thread_id"], "demo", input=user("count me"))
    await agent.client.threads.create()
    await agent.client.crons.create("demo", schedule="0 0 1 1 *", enabled=False)

    response = await http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    found = samples(response.text)
    assert found[("agentctl_runs", (("status", "success"),))] == 1
    assert found[("agentctl_runs", (("status", "pending"),))] == 0
    assert found[("agentctl_threads", (("status", "idle"),))] == 2
    assert found[("agentctl_threads", (("status", "busy"),))] == 0
    assert found[("agentctl_assistants", ())] == 1
    assert found[("agentctl_crons", (("enabled", "false"),))] == 1
    assert found[("agentctl_crons", (("enabled", "true"),))] == 0
    assert found[("agentctl_max_runs", ())] == agent.server.engine.max_runs
    info = next(k for k in found if k[0] == "agentctl_info")
    assert ("graph", "demo") in info[1]
    assert ("revision", "rev-1") in info[1]
    assert any(name == "process_resident_memory_bytes" for name, _ in found)
    assert any(name == "python_info" for name, _ in found)

    # A second scrape reuses the app's registry and sees new data.
    await agent.client.runs.wait(thread["thread_id"], "demo", input=user("again"))
    again = samples((await http.get("/metrics")).text)
    assert again[("agentctl_runs", (("status", "success"),))] == 2
    # The engine records every run it executed, and how long it took.
    assert again[("agentctl_runs_finished_total", (("status", "success"),))] == 2
    assert again[("agentctl_run_duration_seconds_count", (("status", "success"),))] == 2
    assert again[("agentctl_runs_executing", ())] == 0
    assert again[("agentctl_run_queue_depth", ())] == 0
