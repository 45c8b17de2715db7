"""A replica that stalls (SIGSTOP) past its lease, mid-claim and mid-run, many times: every
run executes in one attempt at a time, a stale attempt makes no model call once another took
over, no thread's state goes back, and the other replica's new runs start meanwhile.

Which replica made each model call is read at the scripted model, from the process that
owns the client end of the request's connection."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agentctl.testing import ScriptedModelServer
from agentctl.testing.replicas import Replica
from agentctl.testing.script import message_text
from agentctl.testing.wire import Chat
from tests.conftest import chat_project, eventually
from tests.production.conftest import Cluster, serving
from tests.server.conftest import user

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

LEASE = 1.5  # the cluster's AGENTCTL_LEASE_SECONDS
# How soon after waking a call the frozen replica had begun before it froze reaches the model.
IN_FLIGHT_SECONDS = 0.2
ROUNDS = 5
BURST = 6
# How long after a burst of runs is submitted the replica is frozen: mid-claim, as its
# runs start, mid model call, and as they end.
FREEZE_AFTER = (0.0, 0.02, 0.08, 0.3, 0.55)


def owner_of(port: int, pids: Iterable[int]) -> int | None:
    """Which of `pids` owns the TCP connection whose local end is `port`."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    for pid in pids:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                    return pid
            except OSError:
                continue
    return None


@dataclass
class ModelCall:
    at: float
    pid: int | None
    token: str  # the run's, from its user message


class Calls:
    """The model calls of the replicas, each with the process that made it."""

    def __init__(self) -> None:
        self.pids: list[int] = []
        self.calls: list[ModelCall] = []

    def observe(self, client: tuple[str, int] | None, chat: Chat) -> None:
        last_user = next(m for m in reversed(chat.messages) if m.get("role") == "user")
        token = message_text(last_user.get("content")).split("\n", 1)[0]
        pid = owner_of(client[1], self.pids) if client else None
        self.calls.append(ModelCall(time.time(), pid, token))

    def of(self, token: str) -> list[ModelCall]:
        return [call for call in self.calls if call.token == token]


@pytest.fixture
def recorded_model(cluster: Cluster) -> Iterator[tuple[ScriptedModelServer, Calls]]:
    calls = Calls()
    with ScriptedModelServer(keep_alive=False) as server:
        server.app.observer = calls.observe
        cluster.env.update(server.env)
        yield server, calls


@dataclass
class Freeze:
    stopped: float
    resumed: float
    held: dict[str, int]  # the runs the frozen replica held (run id: attempt)


def worker_mark(replica: Replica) -> str:
    """What the `worker` of a run executed by `replica` holds: its process id."""
    return f":{replica.process.pid}:"


def worker_runs(cluster: Cluster, replica: Replica) -> dict[str, int]:
    with cluster.connect("chat") as conn:
        rows = conn.execute(
            "SELECT run_id, attempt FROM runs WHERE status = 'running' AND worker LIKE %s",
            (f"%{worker_mark(replica)}%",),
        ).fetchall()
    return dict(rows)


def ran_last_on(cluster: Cluster, run_id: str, replica: Replica) -> bool:
    """Whether the run's last attempt was executed by `replica`."""
    with cluster.connect("chat") as conn:
        row = conn.execute("SELECT worker FROM runs WHERE run_id = %s", (run_id,)).fetchone()
    return row is not None and worker_mark(replica) in (row[0] or "")


def run_status(cluster: Cluster, run_id: str) -> str:
    with cluster.connect("chat") as conn:
        row = conn.execute("SELECT status FROM runs WHERE run_id = %s", (run_id,)).fetchone()
    assert row is not None
    status: str = row[0]
    return status


async def test_a_stalled_replica_never_runs_a_run_twice(
    cluster: Cluster, recorded_model: tuple[ScriptedModelServer, Calls], tmp_path: Path
) -> None:
    _, calls = recorded_model
    stalling, steady = cluster.start(), cluster.start()
    calls.pids = [stalling.process.pid, steady.process.pid]
    assert cluster.deploy(chat_project(tmp_path / "chat"), steady).exit_code == 0
    await serving(stalling, 1)
    client = cluster.client(steady)
    # Runs are submitted to the replica that will freeze: it wakes at once and claims them.
    submit = cluster.client(stalling)
    async with client, submit:
        threads: dict[str, tuple[str, str]] = {}  # thread id: (first run's token, follow-up's)
        freezes: list[Freeze] = []
        probe_waits: list[float] = []
        try:
            for round_, delay in enumerate(FREEZE_AFTER[:ROUNDS]):
                for i in range(BURST):
                    thread_id, token = str(uuid.uuid4()), f"run-{round_}-{i}"
                    first = f"{token}\n@sleep 0.4 @say answer {token}"
                    await submit.runs.create(
                        thread_id, "chat", input=user(first), if_not_exists="create"
                    )
                    # A follow-up on the same thread: it goes on from the first one's answer.
                    second = f"{token}-next\n@say next {token}"
                    await submit.runs.create(thread_id, "chat", input=user(second))
                    threads[thread_id] = (token, f"{token}-next")
                await asyncio.sleep(delay)
                stalling.process.send_signal(signal.SIGSTOP)
                stopped = time.time()
                await asyncio.sleep(0.3)  # a claim it sent before it froze has committed
                held = worker_runs(cluster, stalling)
                # While it is frozen, a new run starts on the other replica at once.
                probe = await client.runs.create(
                    None, "chat", input=user(f"probe-{round_}\n@say probe")
                )
                submitted = time.monotonic()
                await eventually(
                    partial(_started, cluster, probe["run_id"]),
                    LEASE * 2,
                    "the probe run to start while a replica is frozen",
                )
                probe_waits.append(time.monotonic() - submitted)
                # Frozen well past its lease: its runs are taken over by the other replica.
                await asyncio.sleep(max(0.0, stopped + 3 * LEASE - time.time()))
                stalling.process.send_signal(signal.SIGCONT)
                freezes.append(Freeze(stopped, time.time(), held))
                await asyncio.sleep(0.5)
            for thread_id in threads:
                await eventually(partial(_idle, client, thread_id), 60, f"{thread_id} to finish")
        finally:
            stalling.process.send_signal(signal.SIGCONT)

        assert any(freeze.held for freeze in freezes), "the replica never froze holding a run"
        for thread_id, (token, follow_up) in threads.items():
            runs = await client.runs.list(thread_id)
            assert [run["status"] for run in runs] == ["success", "success"], thread_id
            # No thread's state went back: both answers are there, in order.
            state: Any = await client.threads.get_state(thread_id)
            said = [message_text(m["content"]) for m in state["values"]["messages"]]
            assert said[1::2] == [f"answer {token}", f"next {token}"], said
            for run in runs:
                attempts = await _attempts(client, thread_id, run["run_id"])
                run_calls = calls.of(follow_up if run is runs[0] else token)
                last_here = ran_last_on(cluster, run["run_id"], stalling)
                _check_one_attempt_at_a_time(
                    run["run_id"], run_calls, attempts, freezes, stalling, last_here
                )


def _check_one_attempt_at_a_time(
    run_id: str,
    run_calls: list[ModelCall],
    attempts: list[int],
    freezes: list[Freeze],
    stalling: Replica,
    last_here: bool,
) -> None:
    """`last_here`: the run's last attempt ran on the replica that stalled (it claimed the
    run again once it woke): the run's last call is that attempt's own."""
    assert attempts == sorted(set(attempts)), (run_id, attempts)  # no attempt ran twice
    # At most one model call per attempt (the run makes one): none of a stale attempt's.
    assert 1 <= len(run_calls) <= len(attempts), (run_id, run_calls, attempts)
    by_time = sorted(run_calls, key=lambda call: call.at)
    stale_calls = by_time[:-1] if last_here else by_time
    for freeze in freezes:
        if run_id in freeze.held and max(attempts) > freeze.held[run_id]:
            # Taken over: the frozen replica started no call for it once it woke. (A call it
            # had checked and begun to send when it froze leaves as it wakes: no provider
            # checks a fence. It leaves at once; any later call would be a new decision.)
            started_late = freeze.resumed + IN_FLIGHT_SECONDS
            late = [c for c in stale_calls if c.pid == stalling.process.pid and c.at > started_late]
            assert late == [], (run_id, late)
    # Calls of one run never interleave between the replicas.
    owners = [call.pid for call in by_time]
    assert owners == sorted(owners, key=owners.index), (run_id, owners)


async def _attempts(client: Any, thread_id: str, run_id: str) -> list[int]:
    attempts = []
    async for part in client.runs.join_stream(thread_id, run_id, last_event_id="-"):
        if part.event == "metadata":
            attempts.append(part.data["attempt"])
    return attempts


async def _idle(client: Any, thread_id: str) -> bool:
    runs = await client.runs.list(thread_id)
    return len(runs) == 2 and all(run["status"] not in ("pending", "running") for run in runs)


async def _started(cluster: Cluster, run_id: str) -> bool:
    """Whether the (stateless) run left `pending`: its record is gone once it has ended."""
    with cluster.connect("chat") as conn:
        row = conn.execute("SELECT status FROM runs WHERE run_id = %s", (run_id,)).fetchone()
    return row is None or row[0] != "pending"
