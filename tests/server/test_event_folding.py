"""A run's events in their compact form (storage/compact.py) replay exactly what its clients
saw live, on SQLite (folded once the run ended) and on PostgreSQL + Redis (stored compact);
threads written before that form still replay, through the run and thread streams and
through the thread-centric protocol."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.schema import StreamMode

from agentctl import serde
from agentctl.settings import Settings
from agentctl.storage import compact
from agentctl.storage.base import event_position
from agentctl.storage.open import open_storage
from agentctl.storage.redis.events import RedisEventLog
from agentctl.storage.sqlite.events import SqliteEventLog
from agentctl.testing.services import free_port
from tests.conftest import eventually
from tests.dev_process import StartDev
from tests.server.conftest import Running, running_server, user
from tests.server.test_thread_streams import read_events

BACKENDS = [
    pytest.param("sqlite"),
    pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.redis]),
]
MODES: list[StreamMode] = ["values", "messages-tuple", "updates"]
Part = tuple[str, Any, str | None]  # (event, data, id) as the SDK gives them


@contextlib.asynccontextmanager
async def serving(
    kind: str, request: pytest.FixtureRequest, demo: Path, data: Path, *, fold: int | None
) -> AsyncIterator[Running]:
    """The demo agent on `kind`'s storage; SQLite folds a run's events `fold` seconds after
    it ends (None: never, as before folding existed)."""
    if kind == "sqlite":
        async with running_server(demo, data) as agent:
            events = agent.server.storage.events
            assert isinstance(events, SqliteEventLog)
            events.fold_after = fold
            yield agent
        return
    env = {
        "DATABASE_URL": request.getfixturevalue("database_url"),
        "REDIS_URL": request.getfixturevalue("redis_server_url"),
        "AGENTCTL_REDIS_PREFIX": request.getfixturevalue("redis_prefix"),
    }
    storage, close = await open_storage(Settings.from_env(env))
    try:
        async with running_server(demo, data, storage=storage) as agent:
            yield agent
    finally:
        await close()


async def streamed(agent: Running, thread_id: str, text: str) -> tuple[str, list[Part]]:
    """A run streamed live: its id and what the client got."""
    parts = [
        (p.event, p.data, p.id)
        async for p in agent.client.runs.stream(
            thread_id, "demo", input=user(text), stream_mode=MODES
        )
    ]
    assert parts[0][0] == "metadata"
    assert parts[-1][0] != "error", parts[-1]
    return parts[0][1]["run_id"], parts


async def joined(agent: Running, thread_id: str, run_id: str, after: str | None) -> list[Part]:
    return [
        (p.event, p.data, p.id)
        async for p in agent.client.runs.join_stream(
            thread_id, run_id, last_event_id=after, stream_mode=MODES
        )
    ]


async def stored_raw(agent: Running, thread_id: str) -> list[bytes]:
    """The thread's events as the backend holds them (compact or not)."""
    events = agent.server.storage.events
    if isinstance(events, SqliteEventLog):
        events.db.flush()
        query = "SELECT data FROM events WHERE thread_id = ? ORDER BY ms, seq"
        return [bytes(row[0]) for row in events.conn.execute(query, (thread_id,))]
    assert isinstance(events, RedisEventLog)
    entries = cast(Any, await events._client.xrange(events.key(thread_id)))
    return [bytes(fields[b"data"]) for _, fields in entries]


async def compacted(agent: Running, thread_id: str) -> int:
    return sum(compact.compacted(data) for data in await stored_raw(agent, thread_id))


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_compact_run_replays_what_its_clients_saw_live(
    kind: str, request: pytest.FixtureRequest, demo: Path, tmp_path: Path
) -> None:
    async with serving(kind, request, demo, tmp_path / "data", fold=0) as agent:
        thread_id = (await agent.client.threads.create())["thread_id"]
        runs = [await streamed(agent, thread_id, f"turn {i}: tell me more") for i in range(3)]

        async def folded() -> bool:  # every token's metadata, every values event (not tiny)
            repeating = [
                p
                for _, parts in runs
                for p in parts
                if p[0] in ("messages", "values") and len(serde.dumps(p[1])) >= compact.MIN_BYTES
            ]
            return await compacted(agent, thread_id) == len(repeating)

        await eventually(folded)
        sent_bytes = sum(len(serde.dumps(p[1])) for _, live in runs for p in live)
        assert sum(len(data) for data in await stored_raw(agent, thread_id)) < sent_bytes / 2
        for run_id, live in runs:
            assert await joined(agent, thread_id, run_id, "-") == live
            middle = len(live) // 2  # resumed after an event: nothing lost, nothing repeated
            assert await joined(agent, thread_id, run_id, live[middle][2]) == live[middle + 1 :]
        # The thread's stream replays every run's events, as they were sent.
        seen: list[Part] = []
        async for p in await agent.client.threads.join_stream(
            thread_id, last_event_id="-", stream_mode="run_modes"
        ):
            seen.append((p.event, p.data, p.id))
            if sum(1 for s in seen if s[0] == "metadata" and s[1].get("status") == "run_done") == 3:
                break
        sent = [p for _, live in runs for p in live if p[0] in ("values", "messages", "updates")]
        assert [s for s in seen if s[0] in ("values", "messages", "updates")] == sent


async def test_the_thread_protocol_shows_a_folded_thread_as_it_showed_it_before(
    demo: Path, tmp_path: Path
) -> None:
    """The protocol's projection of a thread whose events are as they were streamed (as
    every thread written before folding) and of the same thread folded are the same."""
    async with serving("sqlite", None, demo, tmp_path / "data", fold=None) as agent:  # type: ignore[arg-type]
        thread_id = (await agent.client.threads.create())["thread_id"]
        runs = [await streamed(agent, thread_id, f"turn {i}") for i in range(2)]
        channels = ["messages", "values", "updates", "lifecycle", "tasks", "checkpoints"]
        before = await read_events(agent.url, thread_id, channels, runs=2)
        assert await compacted(agent, thread_id) == 0
        events = agent.server.storage.events
        assert isinstance(events, SqliteEventLog)
        for run_id, live in runs:
            first = event_position(str(live[0][2]))
            assert events.fold(thread_id, run_id, first, (2**62, 0)) > 0
        assert await compacted(agent, thread_id) > 0
        after = await read_events(agent.url, thread_id, channels, runs=2)
    assert after == before


@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_thread_written_the_old_way_still_replays(
    kind: str, request: pytest.FixtureRequest, demo: Path, tmp_path: Path
) -> None:
    """Events stored as before the compact form (plain JSON rows, stream entries) are read
    as they are, next to compact ones: the copy of a thread written the old way streams
    what the thread itself streams."""
    async with serving(kind, request, demo, tmp_path / "data", fold=0) as agent:
        thread_id = (await agent.client.threads.create())["thread_id"]
        run_id, live = await streamed(agent, thread_id, "an old conversation")
        events = agent.server.storage.events
        stored = await events.read(thread_id, after=None)
        copy = (await agent.client.threads.create(thread_id=str(uuid.uuid4())))["thread_id"]
        if isinstance(events, SqliteEventLog):
            events.db.flush()
            with events.db.transaction():
                events.conn.executemany(
                    "INSERT INTO events (thread_id, ms, seq, run_id, event, data)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    [(copy, *event_position(e.id), e.run_id, e.event, e.data) for e in stored],
                )
        else:
            assert isinstance(events, RedisEventLog)
            for e in stored:  # the fields the old append script wrote
                fields = {"run_id": e.run_id, "event": e.event, "data": e.data}
                await events._client.xadd(events.key(copy), fields, id=e.id)  # type: ignore[arg-type]
        assert await compacted(agent, copy) == 0
        assert await events.read(copy, after=None) == stored
        page = await events.page(copy, after=stored[2].id, limit=100, max_bytes=1 << 20)
        assert page == stored[3:]
        channels = ["messages", "values", "updates", "lifecycle"]
        assert await read_events(agent.url, copy, channels) == await read_events(
            agent.url, thread_id, channels
        )
        sent = [(e.event, e.data, e.id) for e in stored if e.event != "__end__"]
        seen: list[Part] = []
        async for p in await agent.client.threads.join_stream(
            copy, last_event_id="-", stream_mode="run_modes"
        ):
            seen.append((p.event, p.data, p.id))
            if len(seen) == len(sent):
                break
        assert [(e, serde.dumps(d), i) for e, d, i in seen] == sent
        assert run_id
        assert live


def test_compact_form_gives_back_the_exact_bytes() -> None:
    """Whatever the event, its compact form reads back byte for byte, or it is kept."""
    metadata = {
        "run_id": "r",
        "langgraph_node": "model",
        "lc_versions": {"a": "1"} | {"x": "y" * 300},
    }
    token = serde.dumps([{"content": "hi", "type": "AIMessageChunk"}, metadata])
    values = serde.dumps(
        {"messages": [{"content": f"m{i}", "id": str(i), "pad": "z" * 40} for i in range(20)],
         "todos": [], "files": {"a": "\x00 0 \"\\u00000\""}}
    )  # fmt: skip
    tricky = serde.dumps({"messages": ["\x000", "\\u00000"] * 80})
    for event, data in [("messages", token), ("values|sub:1", values), ("values", tricky)]:
        encoded = compact.encode(event, data)
        if encoded is None:
            continue
        stored, parts = encoded
        assert len(stored) < len(data)
        assert compact.decode(stored, parts) == data
    assert compact.encode("messages", token) is not None
    assert compact.encode("values", values) is not None
    assert compact.encode("updates", values) is None  # only what repeats is compacted
    assert compact.encode("values", b"{}") is None
    assert compact.decode(b'{"plain": 1}', {}) == b'{"plain": 1}'


async def test_the_folds_a_killed_server_left_are_done_after_it_starts_again(
    demo: Path, start_dev: StartDev
) -> None:
    """`agentctl dev` killed before its runs' retention window ended (no stop folds them)
    folds them once it runs again; the thread replays as it did."""
    env = {**os.environ, "AGENTCTL_EVENT_FOLD_SECONDS": "3600"}
    dev = start_dev("--config", demo / "agent.toml", "--port", free_port(), env=env)
    async with get_client(url=dev.ready(), api_key=None) as client:
        thread_id = (await client.threads.create())["thread_id"]
        runs = []
        for i in range(2):
            parts = [
                (p.event, p.data, p.id)
                async for p in client.runs.stream(
                    thread_id, "demo", input=user(f"turn {i}: tell me more"), stream_mode=MODES
                )
            ]
            runs.append((parts[0][1]["run_id"], parts))
    database = demo / ".agentctl" / "data" / "agentctl.db"

    async def both_ended() -> bool:  # committed (a kill loses the last 10 ms of writes)
        with contextlib.closing(sqlite3.connect(database)) as conn:
            query = "SELECT COUNT(*) FROM events WHERE thread_id = ? AND event = '__end__'"
            return bool(conn.execute(query, (thread_id,)).fetchone()[0] == 2)

    await eventually(both_ended, 5, "the runs' ends to be committed")
    dev.proc.send_signal(signal.SIGKILL)
    dev.proc.wait()

    def compact_rows() -> int:  # tokens' events, folded after the run (values: at once)
        with contextlib.closing(sqlite3.connect(database)) as conn:
            rows = conn.execute(
                "SELECT data FROM events WHERE thread_id = ? AND event = 'messages'", (thread_id,)
            )
            return sum(compact.compacted(bytes(row[0])) for row in rows)

    assert compact_rows() == 0

    again = start_dev("--config", demo / "agent.toml", "--port", free_port(), env=env)
    async with get_client(url=again.ready(), api_key=None) as client:

        async def folded() -> bool:
            return compact_rows() > 0

        await eventually(folded, 10, "the leftover folds")
        for run_id, live in runs:
            replayed = [
                (p.event, p.data, p.id)
                async for p in client.runs.join_stream(
                    thread_id, run_id, last_event_id="-", stream_mode=MODES
                )
            ]
            assert replayed == live
    assert again.stop() == 0


def test_a_values_event_after_another_is_compacted_from_what_it_adds() -> None:
    """Given the previous values event's conversation (its head), the next one's compact
    form is the one it has alone, with only the parts it adds; a head it does not start
    with changes nothing."""
    messages = [{"content": f"m{i}", "id": str(i), "pad": "z" * 40} for i in range(20)]
    before = serde.dumps({"messages": messages, "todos": [{"t": 1}]})
    after = serde.dumps({"messages": [*messages, {"content": "new", "id": "n"}], "todos": []})
    first = compact.encode_after("values", before, None)
    assert first is not None
    head = first[2]
    assert head is not None
    assert head.key == "messages"
    assert len(head.digests) == 20
    alone = compact.encode("values", after)
    assert alone is not None
    following = compact.encode_after("values", after, head)
    assert following is not None
    assert following[0] == alone[0]
    assert list(following[1].values()) == [serde.dumps({"content": "new", "id": "n"})]
    assert compact.decode(following[0], alone[1]) == after
    same = compact.encode_after("values", before, head)  # nothing added
    assert same is not None
    assert same[0] == first[0]
    assert list(same[1].values()) == [b'{"t":1}']  # the todos: no message again
    for other in (  # not starting with the head; the head elsewhere
        serde.dumps({"messages": messages[1:], "todos": []}),
        serde.dumps({"nested": {"messages": messages}, "messages": messages[:3]}),
    ):
        unrelated = compact.encode_after("values", other, head)
        assert unrelated is not None
        assert compact.encode("values", other) == unrelated[:2]
