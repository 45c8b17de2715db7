"""The JS SDK's REST client (`new Client()` of @langchain/langgraph-sdk) against a real server:
assistants, threads, state, runs, the thread's stream, store and crons, called as an app calls
them (camelCase options, which the client turns into snake_case fields and query parameters)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import chat_project
from tests.js.conftest import run_node
from tests.server.conftest import running_server


async def test_the_js_client_reads_and_writes_every_resource(
    node: str, js_packages: Path, tmp_path: Path
) -> None:
    async with running_server(chat_project(tmp_path / "chat"), tmp_path / "data") as running:
        result = await run_node(node, "client_rest.mjs", {"api": running.url, "assistant": "chat"})
    steps: dict[str, Any] = result["steps"]
    report = json.dumps(steps, indent=1)
    failed = {
        name: step
        for name, step in steps.items()
        if isinstance(step, dict) and "error" in step and name != "threads.patchState"
    }
    assert failed == {}, report

    # Assistants: the graph's own, and one the app makes, versions, and deletes.
    assert steps["assistants.search"] == ["chat"], report
    assert steps["assistants.get"] == {"graphId": "chat", "version": 1}, report
    assert steps["assistants.getGraph"] == {"nodes": True, "edges": True}, report
    assert {"input_schema", "state_schema"} <= set(steps["assistants.getSchemas"]), report
    assert steps["assistants.create"] == {
        "name": "js-helper",
        "description": "made by the JS client",
        "context": {"tone": "brief"},
    }, report
    assert steps["assistants.update"] == {"name": "js-helper-2", "version": 2}, report
    assert steps["assistants.getVersions"] == [1, 2], report
    assert steps["assistants.setLatest"] == {"name": "js-helper", "version": 1}, report
    assert (steps["assistants.count"], steps["assistants.delete"]) == (1, 0), report

    # Threads: made with the app's id (again: `ifExists: "do_nothing"`), metadata merged.
    created = steps["threads.create"]
    assert created["id"] == created["again"], report
    assert created["metadata"] == {"app": "js", "n": 1}, report
    assert steps["threads.update"] == {"app": "js", "n": 2}, report
    assert steps["threads.get"] == {
        "status": "idle",
        "metadata": {"app": "js", "n": 2},
        "stateUpdatedAt": "string",
    }, report

    # Runs: streamed (the run id reaches `onRunCreated`), replayed, joined, waited, batched,
    # cancelled, deleted.
    streamed = steps["runs.stream"]
    assert streamed["created"] == [{"run": "string", "thread": created["id"]}], report
    assert {"metadata", "values", "messages", "updates"} <= set(streamed["kinds"]), report
    assert streamed["ids"], report
    assert streamed["last"] == "streamed from js", report
    joined = steps["runs.joinStream"]
    assert "values" in joined["kinds"], report
    assert joined["last"] == "streamed from js", report
    assert steps["runs.createAndJoin"] == {
        "status": "success",
        "metadata": {"via": "create"},
        "last": "joined",
        "usage": {"calls": 1, "models": ["openai:scripted"], "tokens": True},
    }, report
    assert steps["runs.list"] == [{"keys": ["run_id", "status"], "status": "success"}] * 2, report
    assert steps["runs.wait.stateless"] == "no thread", report
    assert steps["runs.wait.ifNotExists"] == {"last": "made for me", "thread": True}, report
    assert steps["runs.createBatch"] == ["string", "string"], report
    assert steps["runs.cancelMany"] == "interrupted", report
    assert steps["runs.delete"] == 404, report
    # The thread's stream carries a run started while it is open, to its end.
    assert steps["threads.joinStream"]["runDone"], report

    # State: read, history, a checkpoint by id, written by the app.
    assert steps["threads.getState"] == {"last": "seen live", "checkpoint": "string", "next": []}
    assert steps["threads.getHistory"] == {"count": 2, "olderMatches": True}, report
    assert steps["threads.updateState"] == {
        "checkpoint": "string",
        "last": "written by the app",
    }, report
    # PATCH /threads/{id}/state is no operation of the API: a clear 405, never a 500.
    patched = steps["threads.patchState"]
    assert patched["status"] == 405, report
    assert "use GET, POST" in patched["error"], report

    # Search with `select` and a sort, count, copy and prune.
    assert steps["threads.search"] == [{"id": True, "keys": ["metadata", "thread_id"]}], report
    assert steps["threads.count"] == 1, report
    assert steps["threads.copyAndPrune"] == {"last": "written by the app", "pruned": 1}, report

    # The store: put, get, search by filter, namespaces, delete.
    first = {"namespace": ["js", "notes"], "key": "first", "value": {"text": "hello", "tag": "a"}}
    assert steps["store"] == {
        "item": first,
        "found": ["first"],
        "namespaces": [["js", "notes"]],
        "afterDelete": None,
    }, report

    # Crons: stateless and on the thread, paused, searched, counted, deleted.
    assert steps["crons"] == {"enabled": False, "onThread": [True], "count": 1, "after": 0}, report
    assert steps["threads.delete"] == 404, report
