"""Deleting an agent on a platform of two replicas over PostgreSQL + Redis ends everything of
it on every replica: each open run stream, run join and thread stream (the LangGraph API's
and the thread-stream protocol's, over SSE and WebSocket) gets its end, so the official SDK
stops rather than waiting or reconnecting for ever; and a replica frozen while the agent
was deleted lets go of the agent's PostgreSQL connections once it wakes."""

from __future__ import annotations

import asyncio
import inspect
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import psycopg
import redis.asyncio as redis
from langgraph_sdk.client import LangGraphClient

from agentctl.storage.namespace import Namespace
from agentctl.testing.replicas import Replica
from tests.conftest import eventually
from tests.production.conftest import (
    OPERATOR,
    Cluster,
    agent_client,
    agent_project,
    agent_serving,
)
from tests.server.conftest import user

NEVER = user("@sleep 600 @say too late")  # a run still going when its agent is deleted
ENDS_WITHIN = 60.0  # what a stream that hangs is given before the test says so


Opens = Callable[[], AsyncIterator[Any] | Awaitable[AsyncIterator[Any]]]


class Collected:
    """What one stream gave, read in a task of its own until it ends or fails."""

    def __init__(self, name: str, stream: Opens) -> None:
        self.name = name
        self.items: list[Any] = []
        self.task = asyncio.create_task(self._read(stream))

    async def _read(self, stream: Opens) -> None:
        opened = stream()
        items = await opened if inspect.isawaitable(opened) else opened
        async for item in items:
            self.items.append(item)

    async def started(self) -> None:
        async def some() -> bool:
            assert not self.task.done(), f"{self.name} ended early: {self.task}"
            return bool(self.items)

        await eventually(some, 30, f"{self.name} to start")

    async def ended(self) -> BaseException | None:
        """The error it raised (None when it just ended); fails if it goes on."""
        try:
            async with asyncio.timeout(ENDS_WITHIN):
                await self.task
        except TimeoutError:
            self.task.cancel()
            raise AssertionError(f"{self.name} never ended: {self.items[-3:]}") from None
        except Exception as exc:
            return exc
        return None


def said_deleted(collected: Collected) -> None:
    """It ended with an `error` event saying the agent was deleted."""
    last = collected.items[-1]
    assert last.event == "error", f"{collected.name}: {collected.items[-3:]}"
    assert last.data["error"] == "AgentDeleted", last.data
    assert "agent 'doomed' was deleted" in last.data["message"], last.data


def protocol(client: LangGraphClient, thread_id: str, transport: Any) -> AsyncIterator[Any]:
    async def events() -> AsyncIterator[Any]:
        stream = client.threads.stream(
            thread_id, assistant_id="doomed", transport=transport, headers=OPERATOR
        )
        async with stream as thread:
            async for event in thread.subscribe(["lifecycle"]):
                yield event

    return events()


async def test_deleting_an_agent_ends_its_streams_on_every_replica(
    cluster: Cluster, tmp_path: Path
) -> None:
    first, second = cluster.start(), cluster.start()
    deployed = cluster.deploy(agent_project(tmp_path / "doomed", "doomed"), first)
    assert deployed.exit_code == 0, deployed.err + deployed.out
    await agent_serving(second, "doomed", 1)
    one, two = agent_client(first, "doomed"), agent_client(second, "doomed")
    threads = [(await one.threads.create())["thread_id"] for _ in range(2)]

    # A streamed run on each replica, each joined on the other one; the first thread
    # joined on both, and followed with the thread-stream protocol on both.
    runs = [
        Collected(
            "run stream on first", partial(one.runs.stream, threads[0], "doomed", input=NEVER)
        ),
        Collected(
            "run stream on second", partial(two.runs.stream, threads[1], "doomed", input=NEVER)
        ),
    ]
    for run in runs:
        await run.started()
    first_run, second_run = (run.items[0].data["run_id"] for run in runs)
    joins = [
        Collected("run join on second", partial(two.runs.join_stream, threads[0], first_run)),
        Collected("run join on first", partial(one.runs.join_stream, threads[1], second_run)),
    ]
    thread_joins = [
        Collected(
            f"thread join on {name}",
            partial(client.threads.join_stream, threads[0], last_event_id="-"),
        )
        for name, client in (("first", one), ("second", two))
    ]
    streams = [
        Collected("protocol websocket on first", partial(protocol, one, threads[0], "websocket")),
        Collected("protocol sse on second", partial(protocol, two, threads[0], "sse")),
    ]
    for each in joins + thread_joins + streams:
        await each.started()

    deleted = cluster.deploy(tmp_path, first, "delete", "doomed", "--yes")
    assert deleted.exit_code == 0, deleted.err + deleted.out

    for each in runs + joins + thread_joins:
        assert await each.ended() is None, each.name
        said_deleted(each)
    for each in streams:  # the SDK logs the reason and ends the subscription
        failed = await each.ended()
        assert failed is None or "deleted" in str(failed), f"{each.name}: {failed!r}"
    for client in (one, two):
        await client.aclose()


def application_connections(cluster: Cluster, schema: str) -> int:
    """Connections open on the pools of `schema` (named after it), from any replica."""
    with psycopg.connect(cluster.env["DATABASE_URL"]) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (schema,)
        ).fetchone()
    assert row is not None
    return int(row[0])


async def hang_up(cluster: Cluster, name: str) -> int:
    """Close the Redis connections named `name` (CLIENT KILL); how many there were."""
    client = redis.Redis.from_url(cluster.env["REDIS_URL"])
    try:
        clients = await client.client_list()
        ids = [entry["id"] for entry in clients if entry["name"] == name]
        for client_id in ids:
            await client.client_kill_filter(_id=client_id)
    finally:
        await client.aclose()
    return len(ids)


async def frozen(replica: Replica, during: Callable[[], Awaitable[None]]) -> None:
    """Run `during` while `replica` is stopped (SIGSTOP), then let it go on (SIGCONT)."""
    replica.process.send_signal(signal.SIGSTOP)
    try:
        await during()
    finally:
        replica.process.send_signal(signal.SIGCONT)


async def test_a_replica_frozen_during_the_deletion_lets_go_of_the_agent_when_it_wakes(
    cluster: Cluster, tmp_path: Path
) -> None:
    first, second = cluster.start(), cluster.start()
    for name in ("doomed", "kept"):
        deployed = cluster.deploy(agent_project(tmp_path / name, name), first)
        assert deployed.exit_code == 0, deployed.err + deployed.out
        await agent_serving(second, name, 1)
    schema = Namespace.of("doomed").schema
    asleep = agent_client(second, "doomed")
    waiting = Collected(
        "run stream on the frozen replica", partial(asleep.runs.stream, None, "doomed", input=NEVER)
    )
    await waiting.started()
    assert application_connections(cluster, schema) >= 2  # both replicas' pools

    async def delete() -> None:
        # Redis drops the platform bus's connections meanwhile (the frozen replica's stays
        # down): the frozen replica never hears of the deletion, it must find it out.
        hung_up = await hang_up(cluster, f"{cluster.env['AGENTCTL_REDIS_PREFIX']}:bus")
        assert hung_up == 2, hung_up
        async with httpx.AsyncClient(base_url=first.url, timeout=60) as http:
            answer = await http.delete("/platform/agents/doomed", headers=OPERATOR)
        assert answer.status_code == 200, answer.text

    await frozen(second, delete)

    async def let_go() -> bool:
        return application_connections(cluster, schema) == 0

    async def gone() -> bool:
        async with httpx.AsyncClient(base_url=second.url) as http:
            return (await http.get("/agents/doomed/info")).status_code == 404

    await eventually(gone, 30, "the woken replica to stop serving the deleted agent")
    assert "agent 'doomed' was deleted while this replica was not listening" in second.output()
    try:
        await eventually(let_go, 30, f"the connections on {schema} to close")
    except AssertionError as exc:  # what the woken replica was doing
        raise AssertionError(f"{exc}\n{second.output()[-4000:]}") from None
    assert await waiting.ended() is None
    said_deleted(waiting)
    # It keeps serving the other agent.
    kept = agent_client(second, "kept")
    assert (await kept.assistants.search())[0]["graph_id"] == "kept"
    for client in (asleep, kept):
        await client.aclose()
