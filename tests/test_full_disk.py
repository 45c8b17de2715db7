"""`agentctl dev` on a disk that fills up: a small tmpfs over the project's `.agentctl/`,
filled to the last byte under streamed runs, then freed, with the official langgraph-sdk
client.

No client hears a run's `end` before how it ended is stored in the file; requests that must
write get 503 with `Retry-After` and a detail naming the disk, never a 500; `/ok` says what
is wrong; once the disk has room, every run ends `success` with its answer, with every event
once and no model call made twice. Started on a full disk, it serves read-only and says why,
or, when it cannot even create its database, refuses with a clear error."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import sqlite3
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from agentctl.testing import ScriptedModelServer
from agentctl.testing.outages import MODES, SCRIPT
from tests.conftest import chat_project, eventually
from tests.dev_process import DevProcess, StartDev
from tests.small_disk import SmallDisk

# `agentctl dev` subprocesses, each through an outage of seconds.
pytestmark = pytest.mark.slow

RUNS = 6
CALLS = 5  # model calls of a run of SCRIPT: four tool calls and the answer
ANSWER = "one two three four five six seven eight nine ten"


@pytest.fixture
def project(small_disk: SmallDisk, tmp_path: Path) -> Path:
    """The `chat` project, its `.agentctl/` (revisions and data) on the small disk."""
    root = chat_project(tmp_path / "chat")
    small_disk.mount(root / ".agentctl")
    return root


def data(root: Path) -> Path:
    return root / ".agentctl" / "data"


def stored_status(root: Path, run_id: str) -> str | None:
    """The run's status as another process reads the file: only what is committed."""
    uri = f"file:{data(root) / 'agentctl.db'}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as other:
        row = other.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return None if row is None else str(row[0])


def assert_refused_naming_the_disk(answer: httpx.Response, root: Path) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["retry-after"] == "2"
    assert answer.json()["detail"].startswith(f"the disk holding {data(root)} is full"), answer.text


def assert_one_outage_logged(dev: DevProcess) -> None:
    err = dev.err
    assert "Traceback" not in err, err
    assert "This is a bug" not in err, err
    assert err.count("is full: what runs write waits") == 1, err
    assert err.count("takes writes again") == 1, err


async def test_runs_wait_out_a_full_disk_and_end_once_stored(
    project: Path, small_disk: SmallDisk, start_dev: StartDev, model_server: ScriptedModelServer
) -> None:
    dev = start_dev("--config", project / "agent.toml", "--port", "0")
    url = dev.ready()
    client = get_client(url=url, api_key=None)
    http = httpx.AsyncClient(base_url=url, timeout=30)
    threads = [str(uuid.uuid4()) for _ in range(RUNS)]
    run_ids: dict[str, str] = {}
    seen: dict[str, list[str]] = {}  # thread -> the ids of the events its client got
    answered: set[str] = set()  # threads whose client got the answer
    ends: dict[str, tuple[bool, str | None]] = {}  # thread -> (while full?, status stored)
    full = False
    calls_before = model_server.requests

    async def stream(thread_id: str) -> None:
        ids = seen.setdefault(thread_id, [])
        chat: Any = {"messages": [{"role": "user", "content": SCRIPT}]}
        modes: Any = MODES
        async for part in client.runs.stream(
            thread_id, "chat", input=chat, stream_mode=modes, if_not_exists="create"
        ):
            if part.event == "metadata":
                run_ids[thread_id] = part.data["run_id"]
            if part.event == "values" and part.data["messages"][-1]["content"] == ANSWER:
                answered.add(thread_id)  # the graph's last step: the run ends next
            if part.event == "end":
                ends[thread_id] = (full, stored_status(project, run_ids[thread_id]))
            if part.id:
                ids.append(part.id)

    async def all_answered() -> bool:
        return len(answered) == RUNS

    try:
        streams = [asyncio.create_task(stream(thread_id)) for thread_id in threads]
        await eventually(lambda: _all_in(run_ids, RUNS), what="every run started")
        await asyncio.sleep(0.5)  # the first tool call is done and checkpointed
        small_disk.fill()
        full = True
        refused = await eventually(lambda: _refused(http), what="a write refused")
        assert_refused_naming_the_disk(refused, project)
        assert (await http.get(f"/threads/{threads[0]}")).status_code == 200  # reads answer
        note = await http.put("/store/items", json={"namespace": ["n"], "key": "k", "value": {}})
        assert_refused_naming_the_disk(note, project)
        ok = await http.get("/ok")
        assert ok.status_code == 503, ok.text
        assert ok.headers["retry-after"] == "2"
        assert ok.json()["detail"] == f"the disk holding {data(project)} is full"
        # Every run got its answer; none may be told it ended while that is not stored.
        await eventually(all_answered, seconds=30, what="every run answered")
        await asyncio.sleep(1.0)
        assert ends == {}, ends
        assert not any(task.done() for task in streams)
        # A cancel that comes after the run ended, while its end waits for the disk, is
        # too late: the run still ends `success`, and its clients hear it.
        late = f"/threads/{threads[0]}/runs/{run_ids[threads[0]]}/cancel"
        cancel = asyncio.create_task(http.post(late))
        await asyncio.sleep(0.5)

        full = False
        small_disk.free()
        async with asyncio.timeout(60):
            await asyncio.gather(*streams)
        assert (await cancel).status_code in (202, 404)
        assert ends == {thread_id: (False, "success") for thread_id in threads}
        for thread_id in threads:
            run = await client.runs.get(thread_id, run_ids[thread_id])
            assert run["status"] == "success"
            state: Any = await client.threads.get_state(thread_id)
            assert state["values"]["messages"][-1]["content"] == ANSWER
            stored = [
                part.id
                async for part in client.runs.join_stream(
                    thread_id, run_ids[thread_id], last_event_id="-"
                )
                if part.id
            ]
            assert Counter(seen[thread_id]) == Counter(stored), "an event was lost or sent twice"
        assert model_server.requests - calls_before == RUNS * CALLS  # none made again
        assert (await http.get("/ok")).status_code == 200
        assert (await http.post("/threads", json={})).status_code == 200
    finally:
        await http.aclose()
        await client.aclose()
    assert dev.stop() == 0
    assert_one_outage_logged(dev)


async def _all_in(found: dict[str, str], count: int) -> bool:
    return len(found) == count


async def _refused(http: httpx.AsyncClient) -> httpx.Response | None:
    answer = await http.post("/threads", json={})
    return answer if answer.status_code != 200 else None


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["killed", "stopped"])
async def test_dev_started_on_a_full_disk_serves_read_only_and_goes_on_once_it_has_room(
    project: Path, small_disk: SmallDisk, start_dev: StartDev, stop: signal.Signals
) -> None:
    """The run the last server left (running when killed, handed back when stopped) goes on
    once the disk has room. (Stopped, the server left no WAL index behind: the file opens
    for this process only, as SQLite cannot create the index on the full disk.)"""
    args = ("--config", project / "agent.toml", "--port", "0")
    first = start_dev(*args)
    client = get_client(url=first.ready(), api_key=None)
    thread = await client.threads.create()
    chat = {"messages": [{"role": "user", "content": "@sleep 2 @say resumed"}]}
    run = await client.runs.create(thread["thread_id"], "chat", input=chat)  # type: ignore[arg-type]
    await eventually(lambda: _running(project, run["run_id"]), what="the run claimed")
    first.proc.send_signal(stop)
    first.proc.wait(30)
    await client.aclose()
    small_disk.fill()

    dev = start_dev(*args)
    url = dev.ready()
    says = rf"^warning: {re.escape(f'the disk holding {data(project)} is full')}: serving read-only"
    dev.wait_for(says, "err")
    client = get_client(url=url, api_key=None)
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        found = await http.get(f"/threads/{thread['thread_id']}")
        assert found.status_code == 200, found.text
        assert_refused_naming_the_disk(await http.post("/threads", json={}), project)
        assert (await http.get("/ok")).status_code == 503
        small_disk.free()
        values: Any = await asyncio.wait_for(
            client.runs.join(thread["thread_id"], run["run_id"]), 60
        )
        assert values["messages"][-1]["content"] == "resumed"
        done = await client.runs.get(thread["thread_id"], run["run_id"])
        assert done["status"] == "success"
        assert (await http.post("/threads", json={})).status_code == 200
        assert (await http.get("/ok")).status_code == 200
    await client.aclose()
    assert dev.stop() == 0
    assert_one_outage_logged(dev)


async def _running(root: Path, run_id: str) -> bool:
    return stored_status(root, run_id) == "running"


def test_dev_refuses_to_start_where_it_cannot_create_its_database(
    project: Path, small_disk: SmallDisk, start_dev: StartDev
) -> None:
    small_disk.fill()
    dev = start_dev("--config", project / "agent.toml", "--port", "0")
    assert dev.proc.wait(60) == 1
    dev.close()
    build = project / ".agentctl" / "build"
    assert f"warning: the disk holding {build} is full: the revision was not written" in dev.err
    line = next(line for line in dev.lines["err"] if line.startswith("error: "))
    assert line == (
        f"error: the disk holding {data(project)} is full, so the database agentctl.db cannot "
        "be created or upgraded there — free space on it and start again"
    )
    assert "Traceback" not in dev.err, dev.err
    assert "This is a bug" not in dev.err, dev.err
