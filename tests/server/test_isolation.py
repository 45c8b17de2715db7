"""One signed-in user cannot see, change or use another's threads, runs, crons, store items
or memory, and runs execute as the user who sent them — all through the official SDK."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import (
    APIStatusError,
    NotFoundError,
    PermissionDeniedError,
    UnprocessableEntityError,
)
from langgraph_sdk.schema import Checkpoint, Config, StreamPart

from agentctl.runtime.memory import file_value
from agentctl.runtime.namespaces import (
    escape_id,
    subagent_seeds_namespace,
    user_namespace,
    user_subagent_namespace,
)
from agentctl.testing.demo import SKILL
from tests.conftest import eventually
from tests.server.conftest import ALICE, BOB, Running, TwoUsers, call, user

Request = Callable[[], Awaitable[Any]]
NEVER_SOON = "0 0 1 1 *"
EVERY_SECOND = "* * * * * *"


async def collect(stream: Any) -> list[StreamPart]:
    return [part async for part in stream]


async def join_thread_stream(client: LangGraphClient, thread_id: str) -> list[StreamPart]:
    return await collect(await client.threads.join_stream(thread_id, last_event_id="-"))


def last_answer(values: Any) -> str:
    return str(values["messages"][-1]["content"])


def tool_results(values: Any) -> list[str]:
    return [str(m["content"]) for m in values["messages"] if m["type"] == "tool"]


def detail(error: APIStatusError) -> str:
    assert isinstance(error.body, dict), error.body
    return str(error.body["detail"])


async def assert_not_found(requests: dict[str, Request], kind: str, key: str) -> None:
    """Each request gets the very 404 a `kind` that does not exist gets: nothing tells
    another user's `key` from a missing one. (The SDK raises `NotFoundError`, or a plain
    `httpx.HTTPStatusError` from a few methods such as `runs.cancel(wait=True)`.)"""
    for name, request in requests.items():
        with pytest.raises(httpx.HTTPStatusError) as missing:
            await request()
        response = missing.value.response
        assert response.status_code == 404, (name, response.status_code)
        body = json.loads(await response.aread())
        assert body == {"detail": f"{kind} {key!r} not found"}, name


async def assert_forbidden(requests: dict[str, Request], root: list[str]) -> None:
    for name, request in requests.items():
        with pytest.raises(PermissionDeniedError) as forbidden:
            await request()
        assert str(root) in detail(forbidden.value), name


def labels(users: TwoUsers) -> dict[str, str]:
    """What a run of the deployment's assistant writes into its thread's metadata."""
    deployment = users.running.server.deployment
    return {"graph_id": deployment.graph_id, "assistant_id": deployment.assistant_id}


def ids(records: Any, key: str = "thread_id") -> set[str]:
    return {record[key] for record in records}


# -- threads -------------------------------------------------------------------------------


async def test_a_thread_is_its_owners_alone(two_users: TwoUsers) -> None:
    alice, bob = two_users.alice, two_users.bob
    thread = await alice.threads.create(metadata={"topic": "secret", "owner": BOB})
    tid = thread["thread_id"]
    assert thread["metadata"] == {"topic": "secret", "owner": ALICE}  # not bob's
    await alice.runs.wait(tid, "demo", input=user("alice's secret"))
    before: Any = await alice.threads.get(tid)
    history = await alice.threads.get_history(tid, limit=100)
    checkpoint_id = str(history[0]["checkpoint"]["checkpoint_id"])
    own = await bob.threads.create(metadata={"topic": "secret"})
    at_checkpoint = Checkpoint(
        thread_id=tid, checkpoint_ns="", checkpoint_id=checkpoint_id, checkpoint_map=None
    )

    await assert_not_found(
        {
            "get": lambda: bob.threads.get(tid),
            "update": lambda: bob.threads.update(tid, metadata={"topic": "hijacked"}),
            "delete": lambda: bob.threads.delete(tid),
            "copy": lambda: bob.threads.copy(tid),
            "get_state": lambda: bob.threads.get_state(tid),
            "get_state at a checkpoint": lambda: bob.threads.get_state(
                tid, checkpoint=at_checkpoint
            ),
            "GET state/{checkpoint_id}": lambda: bob.http.get(
                f"/threads/{tid}/state/{checkpoint_id}"
            ),
            "update_state": lambda: bob.threads.update_state(
                tid, {"messages": [{"role": "user", "content": "injected"}]}, as_node="model"
            ),
            "get_history": lambda: bob.threads.get_history(tid),
            "GET history": lambda: bob.http.get(f"/threads/{tid}/history"),
            "join_stream": lambda: join_thread_stream(bob, tid),
            # Creating a thread with her id neither hands him her thread nor says it exists.
            "create": lambda: bob.threads.create(thread_id=tid),
            "create, if_exists=do_nothing": lambda: bob.threads.create(
                thread_id=tid, if_exists="do_nothing"
            ),
        },
        "thread",
        tid,
    )

    # Pointing at her thread or checkpoint from his own thread reaches nothing of hers: a
    # checkpoint naming another thread than the path is refused before any lookup.
    with pytest.raises(UnprocessableEntityError, match="is not the thread of the path"):
        await bob.threads.get_state(own["thread_id"], checkpoint=at_checkpoint)
    assert await bob.threads.get_history(own["thread_id"], before=checkpoint_id) == []
    with pytest.raises(httpx.HTTPStatusError, match="is not the run's thread"):
        await bob.runs.wait(
            own["thread_id"], "demo", input=user("@say {system}"), checkpoint=at_checkpoint
        )
    # Her checkpoint's id on his thread: no such checkpoint there (404), nothing runs.
    with pytest.raises(httpx.HTTPStatusError, match="404") as elsewhere:
        await bob.runs.wait(
            own["thread_id"], "demo", input=user("@say {system}"),
            checkpoint_id=checkpoint_id, config=Config(configurable={"thread_id": tid}),
        )  # fmt: skip
    assert f"not found on thread {own['thread_id']}" in elsewhere.value.response.text
    assert "alice's secret" not in elsewhere.value.response.text
    assert await bob.runs.list(own["thread_id"]) == []

    # Search and count show bob his own threads only, whatever he filters on.
    assert ids(await bob.threads.search(limit=100)) == {own["thread_id"]}
    assert ids(await bob.threads.search(metadata={"topic": "secret"})) == {own["thread_id"]}
    assert tid not in ids(await bob.threads.search(metadata={"owner": ALICE}))
    assert await bob.threads.search(ids=[tid]) == []
    assert await bob.threads.search(values={"messages": before["values"]["messages"]}) == []
    assert await bob.threads.count() == 1
    # Pruning someone else's thread prunes nothing.
    assert await bob.threads.prune([tid]) == {"pruned_count": 0}
    assert await bob.threads.prune([tid], strategy="keep_latest") == {"pruned_count": 0}

    # Alice's thread is as she left it, and still all hers.
    after = await alice.threads.get(tid)
    assert after["metadata"] == {"topic": "secret", "owner": ALICE, **labels(two_users)}
    assert after["values"] == before["values"]
    assert len(await alice.threads.get_history(tid, limit=100)) == len(history)
    assert ids(await alice.threads.search(metadata={"owner": ALICE})) == {tid}
    assert await alice.threads.count() == 1
    patched = await alice.threads.update(tid, metadata={"owner": BOB, "topic": "mine"})
    mine = {"topic": "mine", "owner": ALICE, **labels(two_users)}
    assert patched["metadata"] == mine
    assert (await alice.threads.get(tid))["metadata"] == mine
    state = await alice.threads.get_state(tid, checkpoint=at_checkpoint)
    assert state["checkpoint"]["checkpoint_id"] == checkpoint_id
    copy: Any = await alice.threads.copy(tid)  # type: ignore[func-returns-value]
    assert copy["metadata"]["owner"] == ALICE
    assert copy["values"]["messages"][0]["content"] == "alice's secret"
    assert await bob.threads.search(ids=[copy["thread_id"]]) == []
    assert await alice.threads.prune([copy["thread_id"]]) == {"pruned_count": 1}
    await alice.threads.delete(tid)
    assert await alice.threads.count() == 0
    assert ids(await bob.threads.search()) == {own["thread_id"]}


async def test_a_filter_on_another_users_owner_matches_nothing(two_users: TwoUsers) -> None:
    """A metadata filter is a condition the results meet: `{"owner": alice}` from bob asks
    for alice's records, which he may not see, so it matches none — not his own."""
    alice, bob = two_users.alice, two_users.bob
    await alice.threads.create()
    await alice.crons.create("demo", schedule=NEVER_SOON, input=user("tock"))
    bobs_thread = await bob.threads.create()
    bobs_cron: Any = await bob.crons.create("demo", schedule=NEVER_SOON, input=user("tick"))
    assert bobs_thread["metadata"] == {"owner": BOB}
    assert bobs_cron["metadata"] == {"owner": BOB}

    assert await bob.threads.search(metadata={"owner": ALICE}) == []
    assert await bob.threads.count(metadata={"owner": ALICE}) == 0
    assert await bob.crons.search(metadata={"owner": ALICE}) == []
    assert await bob.crons.count(metadata={"owner": ALICE}) == 0
    # His own owner is a filter that holds for all of his records.
    assert ids(await bob.threads.search(metadata={"owner": BOB})) == {bobs_thread["thread_id"]}
    assert await bob.crons.count(metadata={"owner": BOB}) == 1


# -- runs ----------------------------------------------------------------------------------


def run_requests(client: LangGraphClient, thread_id: str, run_id: str) -> dict[str, Request]:
    """Everything a client can ask of one run."""
    return {
        "get": lambda: client.runs.get(thread_id, run_id),
        "delete": lambda: client.runs.delete(thread_id, run_id),
        "join": lambda: client.runs.join(thread_id, run_id),
        "join_stream": lambda: collect(
            client.runs.join_stream(thread_id, run_id, last_event_id="-")
        ),
        "cancel": lambda: client.runs.cancel(thread_id, run_id),
    }


async def test_runs_on_another_users_thread_are_out_of_reach(two_users: TwoUsers) -> None:
    alice, bob = two_users.alice, two_users.bob
    tid = (await alice.threads.create())["thread_id"]
    background = await alice.runs.create(tid, "demo", input=user("background"))
    await alice.runs.join(tid, background["run_id"])
    streamed = await collect(
        alice.runs.stream(tid, "demo", input=user("streamed"), stream_mode="values")
    )
    streamed_id = streamed[0].data["run_id"]
    # A run still going while bob tries to cancel it.
    slow_tid = (await alice.threads.create())["thread_id"]
    slow = await alice.runs.create(slow_tid, "demo", input=user("@sleep 2.5 @say survived"))
    slow_id = slow["run_id"]
    bobs = (await bob.threads.create())["thread_id"]

    await bob.runs.cancel_many(status="all")  # bob has nothing to cancel...
    await bob.runs.cancel_many(status="pending")
    await bob.runs.cancel_many(status="running")
    await assert_not_found(
        {
            "cancel": lambda: bob.runs.cancel(slow_tid, slow_id),
            "cancel and wait": lambda: bob.runs.cancel(slow_tid, slow_id, wait=True),
            "cancel_many run_ids": lambda: bob.runs.cancel_many(run_ids=[slow_id]),
            "cancel_many on the thread": lambda: bob.runs.cancel_many(
                thread_id=slow_tid, run_ids=[slow_id]
            ),
        },
        "run",
        slow_id,
    )
    await assert_not_found(
        {
            "cancel_many thread_id": lambda: bob.runs.cancel_many(thread_id=slow_tid),
            "interrupt it with a run of his own": lambda: bob.runs.create(
                slow_tid, "demo", input=user("mine now"), multitask_strategy="interrupt"
            ),
        },
        "thread",
        slow_tid,
    )
    assert (await alice.runs.get(slow_tid, slow_id))["status"] in ("pending", "running")

    for run_id in (background["run_id"], streamed_id):
        await assert_not_found(run_requests(bob, tid, run_id), "run", run_id)
        await assert_not_found(run_requests(bob, bobs, run_id), "run", run_id)  # his thread
    await assert_not_found(
        {
            "list": lambda: bob.runs.list(tid),
            "create": lambda: bob.runs.create(tid, "demo", input=user("x")),
            "wait": lambda: bob.runs.wait(tid, "demo", input=user("x")),
            "stream, creating the thread if missing": lambda: collect(
                bob.runs.stream(tid, "demo", input=user("x"), if_not_exists="create")
            ),
            "wait, creating the thread if missing": lambda: bob.runs.wait(
                tid, "demo", input=user("x"), if_not_exists="create"
            ),
            "cron on it": lambda: bob.crons.create_for_thread(
                tid, "demo", schedule=NEVER_SOON, input=user("x")
            ),
        },
        "thread",
        tid,
    )

    # Alice's slow run was never disturbed, and everything of hers is still there.
    assert last_answer(await alice.runs.join(slow_tid, slow_id)) == "survived"
    assert (await alice.runs.get(slow_tid, slow_id))["status"] == "success"
    assert ids(await alice.runs.list(tid), "run_id") == {background["run_id"], streamed_id}
    replay = await collect(alice.runs.join_stream(tid, streamed_id, last_event_id="-"))
    assert [p.id for p in replay] == [p.id for p in streamed]
    values: Any = (await alice.threads.get(tid))["values"]
    assert [m["content"] for m in values["messages"] if m["type"] == "human"] == [
        "background",
        "streamed",
    ]
    assert await bob.runs.list(bobs) == []
    await alice.runs.delete(tid, background["run_id"])
    assert ids(await alice.runs.list(tid), "run_id") == {streamed_id}


# -- crons ---------------------------------------------------------------------------------


def cron_requests(client: LangGraphClient, cron_id: str) -> dict[str, Request]:
    """Everything a client can ask of one cron (the SDK has no `get`: plain GET)."""
    return {
        "GET": lambda: client.http.get(f"/runs/crons/{cron_id}"),
        "update": lambda: client.crons.update(cron_id, schedule=EVERY_SECOND, enabled=True),
        "delete": lambda: client.crons.delete(cron_id),
    }


async def test_crons_are_their_creators_alone(two_users: TwoUsers) -> None:
    alice, bob = two_users.alice, two_users.bob
    tid = (await alice.threads.create())["thread_id"]
    on_thread: Any = await alice.crons.create_for_thread(
        tid, "demo", schedule=NEVER_SOON, input=user("tick"), metadata={"owner": BOB, "k": 1}
    )
    assert on_thread["metadata"] == {"k": 1, "owner": ALICE}
    stateless: Any = await alice.crons.create("demo", schedule=NEVER_SOON, input=user("tock"))
    assert stateless["metadata"] == {"owner": ALICE}
    bobs: Any = await bob.crons.create("demo", schedule=NEVER_SOON, input=user("bob's"))

    for cron in (on_thread, stateless):
        await assert_not_found(cron_requests(bob, cron["cron_id"]), "cron", cron["cron_id"])
    assert ids(await bob.crons.search(limit=100), "cron_id") == {bobs["cron_id"]}
    assert await bob.crons.search(thread_id=tid) == []
    found = ids(await bob.crons.search(metadata={"owner": ALICE}, limit=100), "cron_id")
    assert not found & {on_thread["cron_id"], stateless["cron_id"]}
    assert await bob.crons.count() == 1
    assert await bob.crons.count(thread_id=tid) == 0

    mine = {on_thread["cron_id"], stateless["cron_id"]}
    assert ids(await alice.crons.search(limit=100), "cron_id") == mine
    assert await alice.crons.count() == 2
    fetched = await alice.http.get(f"/runs/crons/{on_thread['cron_id']}")
    assert fetched["schedule"] == NEVER_SOON  # bob's update changed nothing
    assert fetched["metadata"] == {"k": 1, "owner": ALICE}
    patched: Any = await alice.crons.update(on_thread["cron_id"], metadata={"owner": BOB, "k": 2})
    assert patched["metadata"] == {"k": 2, "owner": ALICE}
    await alice.crons.delete(stateless["cron_id"])
    assert ids(await alice.crons.search(), "cron_id") == {on_thread["cron_id"]}


async def test_a_stateless_cron_runs_as_its_creator(two_users: TwoUsers) -> None:
    alice, bob = two_users.alice, two_users.bob
    cron: Any = await alice.crons.create(
        "demo", schedule=EVERY_SECOND, input=user("@say {system}"), on_run_completed="keep"
    )

    async def answered() -> list[Any]:
        found = await alice.threads.search(metadata={"cron_id": cron["cron_id"]}, limit=1)
        done: list[Any] = [t for t in found if t["status"] == "idle" and t["values"]]
        return done if done and done[0]["values"]["messages"][-1]["type"] == "ai" else []

    thread = (await eventually(answered))[0]
    await alice.crons.delete(cron["cron_id"])
    assert thread["metadata"]["owner"] == ALICE
    assert "# About the user" in last_answer(thread["values"])  # alice's memory was loaded
    assert await bob.threads.search(metadata={"cron_id": cron["cron_id"]}) == []
    with pytest.raises(NotFoundError):
        await bob.threads.get(thread["thread_id"])


# -- the store -----------------------------------------------------------------------------


async def test_store_namespaces_are_per_user(two_users: TwoUsers) -> None:
    alice, bob = two_users.alice, two_users.bob
    alice_root = ["users", escape_id(ALICE)]
    bob_root = ["users", escape_id(BOB)]
    notes = [*alice_root, "notes"]
    await alice.store.put_item(notes, "k", {"text": "alice's secret"})
    await bob.store.put_item([*bob_root, "notes"], "k", {"text": "bob's"})

    await assert_forbidden(
        {
            "get": lambda: bob.store.get_item(notes, "k"),
            "put": lambda: bob.store.put_item(notes, "k", {"text": "overwritten"}),
            "put a new key": lambda: bob.store.put_item(notes, "new", {"text": "planted"}),
            "delete": lambda: bob.store.delete_item(notes, "k"),
            "search": lambda: bob.store.search_items(notes),
            "search her root": lambda: bob.store.search_items(alice_root),
            "list_namespaces": lambda: bob.store.list_namespaces(prefix=alice_root),
            "list_namespaces deeper": lambda: bob.store.list_namespaces(prefix=notes),
            "put outside any user": lambda: bob.store.put_item(["shared"], "k", {"v": 1}),
            "search the agent's memory": lambda: bob.store.search_items(["memories"]),
        },
        bob_root,
    )
    for prefix in ([], ["users"]):
        found = (await bob.store.search_items(prefix, limit=100))["items"]
        assert [(i["namespace"], i["value"]) for i in found] == [
            ([*bob_root, "notes"], {"text": "bob's"})
        ], prefix
        assert (await bob.store.list_namespaces(prefix=prefix))["namespaces"] == [
            [*bob_root, "notes"]
        ], prefix
    by_value = await bob.store.search_items([], filter={"text": "alice's secret"}, limit=100)
    assert by_value["items"] == []

    item = await alice.store.get_item(notes, "k")
    assert item["value"] == {"text": "alice's secret"}
    assert (await alice.store.list_namespaces())["namespaces"] == [notes]
    with pytest.raises(PermissionDeniedError):
        await alice.store.get_item([*bob_root, "notes"], "k")
    await alice.store.delete_item(notes, "k")
    assert (await alice.store.search_items([]))["items"] == []
    assert len((await bob.store.search_items([]))["items"]) == 1


# -- identity in runs and user memory ----------------------------------------------------


def remember(fact: str) -> str:
    """A script that makes the agent add `fact` to the user's memory file."""
    edit = call(
        "edit_file",
        file_path="/memories/user/AGENTS.md",
        old_string="# About the user",
        new_string=f"# About the user\n- {fact}",
    )
    return edit + "\n@say noted"


async def system_prompt(client: LangGraphClient, **options: Any) -> str:
    """The system prompt of a new conversation of the client's user."""
    thread_id = str(uuid.uuid4())
    values = await client.runs.wait(
        thread_id, "demo", input=user("@say {system}"), if_not_exists="create", **options
    )
    return last_answer(values)


async def test_user_memory_belongs_to_the_signed_in_user(two_users: TwoUsers) -> None:
    alice, bob = two_users.alice, two_users.bob
    edited = await alice.runs.wait(
        str(uuid.uuid4()), "demo", input=user(remember("prefers green tea")),
        if_not_exists="create",
    )  # fmt: skip
    assert "Successfully replaced" in tool_results(edited)[0]
    await bob.runs.wait(None, "demo", input=user(remember("drinks coffee")))

    # Preloaded in the user's next conversations, and in no one else's.
    prompt = await system_prompt(alice)
    assert "prefers green tea" in prompt
    assert "drinks coffee" not in prompt
    prompt = await system_prompt(bob)
    assert "drinks coffee" in prompt
    assert "prefers green tea" not in prompt

    # A run executes as its sender, whatever user its config names.
    for sender, named, own, other in (
        (alice, BOB, "prefers green tea", "drinks coffee"),
        (bob, ALICE, "drinks coffee", "prefers green tea"),
    ):
        spoofed = Config(configurable={"graph_auth_user_id": named})
        prompt = await system_prompt(sender, config=spoofed)
        assert own in prompt
        assert other not in prompt
        values = await sender.runs.wait(None, "demo", input=user("@say {system}"), config=spoofed)
        assert own in last_answer(values)
        assert other not in last_answer(values)

    # Bob's file tools cannot reach alice's memory.
    probes = [
        call("read_file", file_path="/memories/user/AGENTS.md"),
        call("ls", path="/memories/user/"),
        call("ls", path="/memories/"),
        call("glob", pattern="**/*", path="/memories/"),
        call("grep", pattern="green tea", path="/memories/"),
        call("grep", pattern="green tea"),
        call("read_file", file_path=f"/memories/users/{escape_id(ALICE)}/AGENTS.md"),
    ]
    spoofed = Config(configurable={"graph_auth_user_id": ALICE})
    values = await bob.runs.wait(
        None, "demo", input=user("\n".join([*probes, "@say done"])), config=spoofed
    )
    seen = tool_results(values)
    assert len(seen) == len(probes)
    assert "drinks coffee" in seen[0]  # his own file
    for probe, result in zip(probes, seen, strict=True):
        assert "green tea" not in result, probe
        if "alice" not in probe:
            assert "alice" not in result, probe

    # The same file through the store API: alice's, under her root; 403 for bob.
    namespace = list(user_namespace("demo", ALICE))
    item = await alice.store.get_item(namespace, "/AGENTS.md")
    assert "prefers green tea" in json.dumps(item["value"])
    with pytest.raises(PermissionDeniedError):
        await bob.store.get_item(namespace, "/AGENTS.md")
    bobs = (await bob.store.search_items(["users"], limit=100))["items"]
    assert [i["namespace"] for i in bobs] == [list(user_namespace("demo", BOB))]
    assert "green tea" not in json.dumps(bobs)


async def test_without_auth_user_memory_is_skipped(agent: Running) -> None:
    client = agent.client  # the plain demo: anonymous callers, no user
    spoofed = Config(configurable={"graph_auth_user_id": ALICE})  # ignored: it is no identity
    values = await client.runs.wait(
        None, "demo", input=user(remember("prefers green tea")), config=spoofed
    )
    assert "no user is signed in" in tool_results(values)[0]
    prompt = await system_prompt(client, config=spoofed)
    assert "You are the demo agent." in prompt
    assert "# About the user" not in prompt
    assert (await client.store.list_namespaces(prefix=["users"]))["namespaces"] == []


# -- subagent memory ---------------------------------------------------------------------

NOTES = "/memories/subagents/researcher/alice-notes.md"
SEEDS = {
    "/memories/subagents/researcher/AGENTS.md": "You research.",
    "/memories/subagents/researcher/skills/search/SKILL.md": "search things well",
}


def delegate(*steps: str) -> str:
    """A main-agent script running each step in its own `researcher` task, in parallel;
    each task answers its step's tool result."""
    tasks = [
        call("task", subagent_type="researcher", description=f"{step}\n@say {{last_tool_result}}")
        for step in steps
    ]
    return " && ".join(tasks) + "\n@say done"


async def run_script(client: LangGraphClient, script: str) -> list[str]:
    values = await client.runs.wait(None, "demo", input=user(script))
    return tool_results(values)


async def test_subagent_memory_belongs_to_the_signed_in_user(two_users: TwoUsers) -> None:
    alice, bob = two_users.alice, two_users.bob
    store = two_users.running.server.storage.store
    # A file a subagent wrote when its memory was shared: no user's agent shows it any more.
    legacy = file_value(b"written for everyone by an earlier version: ACME")
    await store.aput(subagent_seeds_namespace("demo", "researcher"), "/old-notes.md", legacy)
    plan = "alice plans to buy ACME"
    [written] = await run_script(alice, delegate(call("write_file", file_path=NOTES, content=plan)))
    assert f"Updated file {NOTES}" in written

    # Bob's main agent finds nothing of it; it still reads the researcher's seeds.
    main_probes = [
        call("read_file", file_path=NOTES),
        call("ls", path="/memories/subagents/researcher/"),
        call("ls", path="/memories/"),
        call("glob", pattern="**/*", path="/memories/"),
        call("grep", pattern="ACME", path="/memories/"),
        call("grep", pattern="ACME"),
        *(call("read_file", file_path=seed) for seed in SEEDS),
    ]
    seen = await run_script(bob, "\n".join([*main_probes, "@say done"]))
    assert len(seen) == len(main_probes)
    for probe, result in zip(main_probes, seen, strict=True):
        assert "ACME" not in result, probe
        assert "old-notes" not in result, probe
        if "alice-notes" in probe:
            assert "not found" in result, probe
        else:
            assert "alice-notes" not in result, probe
    assert "AGENTS.md" in seen[1]
    assert "skills/" in seen[1]
    for (path, text), result in zip(SEEDS.items(), seen[-2:], strict=True):
        assert text in result, path

    # Bob's researcher neither finds it nor overwrites it; nor does it change its seeds.
    sub_probes = [
        call("read_file", file_path=NOTES),
        call("ls", path="/memories/subagents/researcher/"),
        call("glob", pattern="**/*.md", path="/memories/subagents/researcher/"),
        call("grep", pattern="ACME", path="/memories/subagents/researcher/"),
        call("grep", pattern="ACME"),
    ]
    seen = await run_script(bob, delegate(*sub_probes))
    assert len(seen) == len(sub_probes)
    for probe, result in zip(sub_probes, seen, strict=True):
        assert "ACME" not in result, probe
        assert "old-notes" not in result, probe
        if "alice-notes" in probe:
            assert "not found" in result, probe
        else:
            assert "alice-notes" not in result, probe
    assert "AGENTS.md" in seen[1]
    overwrite = call("write_file", file_path=NOTES, content="bob was here")
    [bobs] = await run_script(bob, delegate(overwrite))
    assert f"Updated file {NOTES}" in bobs  # his own file of that name

    # Neither user's researcher may change its seeds; both read them.
    for client in (alice, bob):
        seed_probes = [
            *(call("read_file", file_path=seed) for seed in SEEDS),
            *(call("write_file", file_path=seed, content="evil") for seed in SEEDS),
            *(
                call("edit_file", file_path=seed, old_string=text, new_string="evil")
                for seed, text in SEEDS.items()
            ),
            call("write_file", file_path="/memories/subagents/researcher/skills/x/SKILL.md",
                 content="evil"),
        ]  # fmt: skip
        seen = await run_script(client, delegate(*seed_probes))
        for text, result in zip(SEEDS.values(), seen, strict=False):
            assert text in result
        for result in seen[2:]:
            assert "permission denied for write" in result, result

    # Alice still finds her own file, unchanged, from her main agent and her researcher.
    read = call("read_file", file_path=NOTES)
    seen = await run_script(alice, "\n".join([read, call("grep", pattern="ACME"), "@say done"]))
    assert plan in seen[0]
    assert "alice-notes" in seen[1]
    [from_researcher] = await run_script(alice, delegate(read))
    assert plan in from_researcher
    assert "bob was here" not in from_researcher
    [bobs] = await run_script(bob, delegate(read))
    assert "bob was here" in bobs

    # Through the store API: in each user's own root, 403 for the other; seeds untouched.
    namespace = list(user_subagent_namespace("demo", ALICE, "researcher"))
    item = await alice.store.get_item(namespace, "/alice-notes.md")
    assert plan in json.dumps(item["value"])
    with pytest.raises(PermissionDeniedError):
        await bob.store.get_item(namespace, "/alice-notes.md")
    seeds = subagent_seeds_namespace("demo", "researcher")
    stored = {item.key: item.value["content"] for item in await store.asearch(seeds)}
    assert stored == {
        "/AGENTS.md": "You research.\n",
        "/skills/search/SKILL.md": SKILL.format("search"),
        "/old-notes.md": "written for everyone by an earlier version: ACME",
    }


async def test_without_auth_a_subagent_writes_no_memory(agent: Running) -> None:
    """No user, no memory of one's own: writes are refused, the seeds are still read."""
    write = call("write_file", file_path=NOTES, content="anonymous plan")
    seen = await run_script(
        agent.client, delegate(write, *(call("read_file", file_path=s) for s in SEEDS))
    )
    assert "no user is signed in" in seen[0]
    assert "You research." in seen[1]
    assert "search things well" in seen[2]
    seen = await run_script(
        agent.client, delegate(call("ls", path="/memories/subagents/researcher/"))
    )
    assert "alice-notes" not in seen[0]
    assert "AGENTS.md" in seen[0]
