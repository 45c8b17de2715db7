"""Users' own connections to a user-owned MCP server, end to end: an agent served as
`agentctl dev` serves it, the loopback OAuth provider and its notes MCP server, the official
langgraph-sdk, and a browser played by an httpx client that keeps its cookies, doing what the
console's page of a consent request does (`agentctl.testing.consent`)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from agentctl.storage.base import UserConnection
from agentctl.testing.consent import consent, link_parts, signed_in
from agentctl.testing.identity import IdpBServer
from agentctl.testing.oauth_provider import OAuthProvider, running_oauth_provider
from tests.conftest import eventually
from tests.server.conftest import Running, TwoUsers, call, running_server, sdk, user

EVERY_SECOND = "* * * * * *"


def notes_project(root: Path, provider: OAuthProvider, idp: IdpBServer) -> Path:
    """An agent whose `notes` server is user-owned, with signed-in users (idp_b) and a
    subagent `helper`."""
    root.mkdir(parents=True)
    (root / "agent.toml").write_text(
        '[agent]\nname = "notes-agent"\nmodel = "openai:scripted"\n'
        '[interrupt_on]\nwrite_file = true\n[auth]\nprovider = "idp_b"\n'
    )
    (root / "AGENTS.md").write_text("You keep the user's notes.\n")
    (root / ".env").write_text("".join(f"{k}={v}\n" for k, v in idp.env.items()))
    mcp = {
        "mcpServers": {
            "notes": {
                "url": provider.mcp_url,
                "description": "Your notes in Loopback Notes",
                "oauth": {"scopes": ["notes.read", "notes.write"]},
            }
        }
    }
    (root / "mcp.json").write_text(json.dumps(mcp))
    helper = root / "subagents/helper"
    helper.mkdir(parents=True)
    (helper / "agent.toml").write_text('[agent]\nname = "helper"\ndescription = "Helps"\n')
    (helper / "AGENTS.md").write_text("You help.\n")
    return root


@dataclass
class Notes:
    running: Running
    provider: OAuthProvider
    idp: IdpBServer
    exit: AsyncExitStack

    @property
    def url(self) -> str:
        return self.running.url

    @property
    def assistant(self) -> str:
        return self.running.server.deployment.assistant_id

    def token(self, name: str) -> str:
        return self.idp.mint(name, expires_in=3600)

    def client(self, name: str | None = None, **options: Any) -> LangGraphClient:
        client = sdk(self.url, token=None if name is None else self.token(name), **options)
        self.exit.push_async_callback(client.aclose)
        return client

    async def http(self, name: str | None = None) -> httpx.AsyncClient:
        headers = {} if name is None else {"Authorization": f"Bearer {self.token(name)}"}
        client = httpx.AsyncClient(base_url=self.url, headers=headers)
        self.exit.push_async_callback(client.aclose)
        return client

    async def browser(self) -> httpx.AsyncClient:
        """A browser: keeps cookies, follows nothing by itself."""
        client = httpx.AsyncClient()
        self.exit.push_async_callback(client.aclose)
        return client

    async def consent(
        self, authorization_url: str, name: str, browser: httpx.AsyncClient | None = None
    ) -> httpx.Response:
        """Open the consent link signed in as `name`, Continue, sign in at the provider as
        `name`, and land on the callback: its page."""
        browser = browser or await self.browser()
        return await consent(browser, authorization_url, self.token(name), self.provider, name)

    async def signed_in(self, authorization_url: str, name: str, browser: httpx.AsyncClient) -> str:
        """As `consent`, up to the callback URL the provider sends the browser back to."""
        return await signed_in(browser, authorization_url, self.token(name), self.provider, name)

    async def connect(self, name: str) -> None:
        """`name` connects notes without a run (`POST /connections/notes/authorize`)."""
        http = await self.http(name)
        started = await http.post("/connections/notes/authorize")
        assert started.status_code == 200, started.text
        done = await self.consent(started.json()["authorization_url"], name)
        assert done.status_code == 200, done.text
        assert "Connected" in done.text


@pytest.fixture
async def provider() -> AsyncIterator[OAuthProvider]:
    async with running_oauth_provider() as started:
        yield started


@pytest.fixture
async def notes(tmp_path: Path, provider: OAuthProvider, idp_b: IdpBServer) -> AsyncIterator[Notes]:
    root = notes_project(tmp_path / "notes-agent", provider, idp_b)
    async with running_server(root, tmp_path / "data") as running, AsyncExitStack() as stack:
        yield Notes(running, provider, idp_b, stack)


def answer(values: Any) -> str:
    return str(values["messages"][-1]["content"])


def interrupt_of(values: Any) -> dict[str, Any]:
    interrupts = values.get("__interrupt__") or []
    assert len(interrupts) == 1, values
    value: dict[str, Any] = interrupts[0]["value"]
    return value


WHOAMI = f"{call('whoami')}\n@say I am {{last_tool_result}}"


async def ask(client: LangGraphClient, notes: Notes, script: str, thread: str | None = None) -> Any:
    thread_id = thread or (await client.threads.create())["thread_id"]
    return await client.runs.wait(thread_id, notes.assistant, input=user(script))


async def idle_answer(client: LangGraphClient, thread_id: str) -> str:
    """The thread's last answer once no run is waiting or going on."""

    async def settled() -> Any:
        thread: Any = await client.threads.get(thread_id)
        return thread["status"] == "idle" and thread

    thread = await eventually(settled, seconds=20, what="the thread to go idle")
    return answer(thread["values"])


# -- users each see their own ------------------------------------------------------------


async def test_each_user_connects_and_sees_only_their_own(notes: Notes) -> None:
    await notes.connect("alice")
    await notes.connect("bob")
    alice, bob = notes.client("alice"), notes.client("bob")
    thread_id = (await alice.threads.create())["thread_id"]
    assert answer(await ask(alice, notes, WHOAMI, thread_id)) == "I am alice"
    assert answer(await ask(bob, notes, WHOAMI)) == "I am bob"
    # The call is metered as an MCP call of the user-owned server, in the run's trace.
    [run] = await alice.runs.list(thread_id)
    http = await notes.http("alice")
    trace = await http.get(f"/threads/{thread_id}/runs/{run['run_id']}/trace")
    assert [(step["kind"], step["name"]) for step in trace.json()["steps"]][1:] == [
        ("mcp", "notes/whoami"),
        ("model", "openai:scripted"),
    ]
    mine = f"{call('my_notes')}\n@say {{last_tool_result}}"
    assert "oat milk" in answer(await ask(alice, notes, mine))
    bobs = answer(await ask(bob, notes, mine))
    assert "ficus" in bobs
    assert "oat milk" not in bobs
    # Listed for each: their own connection, never a token.
    listed = (await (await notes.http("alice")).get("/connections")).json()
    [entry] = listed["connections"]
    assert entry["server"] == "notes"
    assert entry["connected"] is True
    assert entry["description"] == "Your notes in Loopback Notes"
    assert set(entry) == {"server", "description", "connected", "scopes", "connected_at",
                          "expires_at"}  # fmt: skip
    carols = (await (await notes.http("carol")).get("/connections")).json()
    assert carols["connections"][0]["connected"] is False


async def test_a_user_not_connected_gets_the_consent_request_and_the_run_goes_on(
    notes: Notes,
) -> None:
    await notes.connect("alice")  # the catalog exists: whoami is offered
    carol = notes.client("carol")
    thread_id = (await carol.threads.create())["thread_id"]
    waiting = await ask(carol, notes, WHOAMI, thread_id)
    value = interrupt_of(waiting)
    assert value["type"] == "connection_required"
    assert value["server"] == "notes"
    assert value["description"] == "Your notes in Loopback Notes"
    url = value["authorization_url"]
    assert url == f"{notes.url}/ui/#/connect/{value['flow_id']}"
    assert url in value["message"]
    thread: Any = await carol.threads.get(thread_id)
    assert thread["status"] == "interrupted"
    # The call that paused for consent did not fail: its step in the run's trace says none.
    [run] = await carol.runs.list(thread_id)
    http = await notes.http("carol")
    trace = (await http.get(f"/threads/{thread_id}/runs/{run['run_id']}/trace")).json()
    [paused] = [step for step in trace["steps"] if step["kind"] == "mcp"]
    assert paused["name"] == "notes/whoami"
    assert "error" not in paused
    done = await notes.consent(url, "carol")
    assert done.status_code == 200
    assert "goes on by itself" in done.text
    assert await idle_answer(carol, thread_id) == "I am carol"


async def test_before_anyone_connected_the_agent_offers_connect(notes: Notes) -> None:
    carol = notes.client("carol")
    thread_id = (await carol.threads.create())["thread_id"]
    script = f"{call('connect_notes')}\n{WHOAMI}"
    value = interrupt_of(await ask(carol, notes, script, thread_id))
    await notes.consent(value["authorization_url"], "carol")
    assert await idle_answer(carol, thread_id) == "I am carol"
    state: Any = await carol.threads.get_state(thread_id)
    results = [m["content"] for m in state["values"]["messages"] if m["type"] == "tool"]
    assert "whoami" in results[0]
    assert "my_notes" in results[0]


async def test_a_subagent_calls_as_the_user_and_its_consent_reaches_the_thread(
    notes: Notes,
) -> None:
    await notes.connect("alice")
    carol = notes.client("carol")
    thread_id = (await carol.threads.create())["thread_id"]
    task = call("task", description=WHOAMI, subagent_type="helper")
    value = interrupt_of(await ask(carol, notes, f"{task}\n@say {{last_tool_result}}", thread_id))
    assert value["type"] == "connection_required"
    await notes.consent(value["authorization_url"], "carol")
    assert await idle_answer(carol, thread_id) == "I am carol"


async def test_an_approval_gate_and_the_consent_request_follow_each_other(notes: Notes) -> None:
    await notes.connect("alice")
    carol = notes.client("carol")
    thread_id = (await carol.threads.create())["thread_id"]
    both = f"{call('write_file', file_path='/x.txt', content='x')} && {call('whoami')}"
    gate = await ask(carol, notes, f"{both}\n@say I am {{last_tool_result}}", thread_id)
    [gated] = gate["__interrupt__"]
    assert "action_requests" in gated["value"]  # deepagents' approval gate first
    resumed = await carol.runs.wait(
        thread_id, notes.assistant, command={"resume": {"decisions": [{"type": "approve"}]}}
    )
    value = interrupt_of(resumed)
    assert value["type"] == "connection_required"
    await notes.consent(value["authorization_url"], "carol")
    assert await idle_answer(carol, thread_id) == "I am carol"


async def test_without_a_signed_in_user_the_tool_says_why(
    tmp_path: Path, provider: OAuthProvider, idp_b: IdpBServer
) -> None:
    root = notes_project(tmp_path / "anonymous", provider, idp_b)
    config = root / "agent.toml"
    config.write_text(config.read_text().split("[auth]")[0])  # no [auth]: anonymous callers
    async with running_server(root, tmp_path / "anonymous-data") as running:
        client = running.client
        thread_id = (await client.threads.create())["thread_id"]
        assistant = running.server.deployment.assistant_id
        script = f"{call('connect_notes')}\n@say {{last_tool_result}}"
        done: Any = await client.runs.wait(thread_id, assistant, input=user(script))
        assert "__interrupt__" not in done
        said = answer(done)
        assert "acts as the signed-in user" in said
        assert "no signed-in user" in said


async def test_a_cron_runs_as_its_creator(notes: Notes) -> None:
    await notes.connect("bob")
    bob = notes.client("bob")
    thread_id = (await bob.threads.create())["thread_id"]
    cron: Any = await bob.crons.create_for_thread(
        thread_id, notes.assistant, schedule=EVERY_SECOND, input=user(WHOAMI)
    )

    async def answered() -> Any:
        values = (await bob.threads.get(thread_id))["values"]
        said = [m["content"] for m in (values or {}).get("messages", []) if m["type"] == "ai"]
        return "I am bob" in said

    # Runs follow each other every second: read what one of them answered.
    await eventually(answered, seconds=30, what="the cron's run")
    await bob.crons.delete(cron["cron_id"])


# -- tokens over time ---------------------------------------------------------------------


async def test_a_short_lived_token_is_refreshed_and_a_revoked_grant_asks_again(
    tmp_path: Path, idp_b: IdpBServer
) -> None:
    async with (
        running_oauth_provider(access_token_seconds=5) as provider,
        running_server(
            notes_project(tmp_path / "short", provider, idp_b), tmp_path / "short-data"
        ) as running,
        AsyncExitStack() as stack,
    ):
        notes = Notes(running, provider, idp_b, stack)
        await notes.connect("alice")
        alice = notes.client("alice")
        assert answer(await ask(alice, notes, WHOAMI)) == "I am alice"
        refreshed = provider.refresh_requests
        await asyncio.sleep(5.5)  # expired (and within a minute of it anyway)
        assert answer(await ask(alice, notes, WHOAMI)) == "I am alice"
        assert provider.refresh_requests > refreshed
        # The provider ends alice's grant: her next call asks her to connect again.
        provider.revoke_refresh_tokens("alice")
        provider.revoke_access_tokens("alice")
        thread_id = (await alice.threads.create())["thread_id"]
        value = interrupt_of(await ask(alice, notes, WHOAMI, thread_id))
        assert value["type"] == "connection_required"
        run = (await alice.runs.list(thread_id))[0]
        assert run["status"] != "error"
        await notes.consent(value["authorization_url"], "alice")
        assert await idle_answer(alice, thread_id) == "I am alice"


async def test_a_revoked_connection_is_gone_and_asked_for_again(notes: Notes) -> None:
    await notes.connect("alice")
    http = await notes.http("alice")
    assert (await http.delete("/connections/notes")).status_code == 204
    listed = (await http.get("/connections")).json()["connections"]
    assert listed[0]["connected"] is False
    assert await notes.running.server.storage.connections.get("alice", "notes") is None
    alice = notes.client("alice")
    value = interrupt_of(await ask(alice, notes, WHOAMI))
    assert value["type"] == "connection_required"
    missing = await http.delete("/connections/nope")
    assert missing.status_code == 404
    assert "notes" in missing.json()["detail"]


async def test_a_connection_to_a_removed_server_and_all_of_them_can_be_removed(
    notes: Notes,
) -> None:
    """`DELETE /connections/{server}` removes a stored connection to a server no longer in
    mcp.json (404 only when there is neither); `DELETE /connections` removes them all."""
    await notes.connect("alice")
    await notes.connect("bob")
    stored = notes.running.server.storage.connections
    alices = await stored.get("alice", "notes")
    assert alices is not None
    removed = replace(alices, server="calendar")  # a server mcp.json named before
    assert await stored.put(removed, expected_version=None)
    http = await notes.http("alice")
    assert (await http.delete("/connections/calendar")).status_code == 204
    assert await stored.get("alice", "calendar") is None
    gone = await http.delete("/connections/calendar")
    assert gone.status_code == 404
    assert "calendar" in gone.json()["detail"]
    assert await stored.put(removed, expected_version=None)
    assert (await http.delete("/connections")).status_code == 204
    assert await stored.list("alice") == []
    assert (await http.delete("/connections")).status_code == 204  # none left: all the same
    assert await stored.get("bob", "notes") is not None
    listed = (await http.get("/connections")).json()["connections"]
    assert [entry["connected"] for entry in listed] == [False]


async def test_connections_are_removed_from_an_agent_without_user_owned_servers(
    two_users: TwoUsers,
) -> None:
    """The servers were all removed from mcp.json: their connections can still be."""
    stored = two_users.running.server.storage.connections
    now = datetime.now(UTC)
    for name in ("notes", "calendar"):
        kept = UserConnection("alice", name, b"sealed", (), None, now, now)
        assert await stored.put(kept, expected_version=None)
    token = two_users.idp.mint("alice", expires_in=3600)
    async with httpx.AsyncClient(
        base_url=two_users.running.url, headers={"Authorization": f"Bearer {token}"}
    ) as http:
        assert (await http.delete("/connections/notes")).status_code == 204
        assert (await http.delete("/connections/notes")).status_code == 404
        assert (await http.delete("/connections")).status_code == 204
    assert await stored.list("alice") == []


async def test_the_operator_sees_counts_never_tokens(notes: Notes) -> None:
    await notes.connect("alice")
    await notes.connect("bob")
    # `agentctl dev`'s operator: the development UI, from this machine.
    dev_ui = {"x-auth-scheme": "langsmith"}
    async with httpx.AsyncClient(base_url=notes.url, headers=dev_ui) as operator:
        seen = (await operator.get("/connections")).json()
    assert seen == {
        "servers": [{"server": "notes", "description": "Your notes in Loopback Notes", "users": 2}]
    }


# -- what a browser may and may not do ------------------------------------------------------


async def start_flow(notes: Notes, name: str) -> dict[str, Any]:
    started = await (await notes.http(name)).post("/connections/notes/authorize")
    assert started.status_code == 200, started.text
    body: dict[str, Any] = started.json()
    return body


async def test_a_flow_of_alice_cannot_be_redirected_by_bob(notes: Notes) -> None:
    flow = await start_flow(notes, "alice")
    bobs = await (await notes.http("bob")).post(f"/connections/flows/{flow['flow_id']}/redirect")
    assert bobs.status_code == 404
    alices = await (await notes.http("alice")).post(
        f"/connections/flows/{flow['flow_id']}/redirect"
    )
    assert alices.status_code == 200
    redirect_url = alices.json()["redirect_url"]
    assert redirect_url.startswith(f"{notes.provider.issuer}/authorize?")
    assert "agentctl_connect=" in alices.headers["set-cookie"]
    cookie = alices.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=lax" in cookie
    assert "path=/connections/callback" in cookie
    again = await (await notes.http("alice")).post(f"/connections/flows/{flow['flow_id']}/redirect")
    assert again.status_code >= 400  # once per flow


async def test_forged_replayed_and_foreign_callbacks_are_refused(notes: Notes) -> None:
    browser = await notes.browser()
    flow = await start_flow(notes, "alice")
    back = await notes.signed_in(flow["authorization_url"], "alice", browser)
    query = parse_qs(urlsplit(back).query)
    callback = f"{notes.url}/connections/callback"
    # A forged state.
    forged = await browser.get(callback, params={"code": query["code"][0], "state": "x" * 43})
    assert forged.status_code == 400
    assert "text/html" in forged.headers["content-type"]
    # Another browser (no binding cookie) with the real code and state.
    async with httpx.AsyncClient() as stranger:
        stolen = await stranger.get(back)
    assert 400 <= stolen.status_code < 500
    assert "Traceback" not in stolen.text
    # The first use spent the flow: the rightful browser's is now refused too, as a replay.
    replay = await browser.get(back)
    assert 400 <= replay.status_code < 500
    assert await notes.running.server.storage.connections.get("alice", "notes") is None
    # Missing parameters, and the provider's refusal.
    assert (await browser.get(callback)).status_code == 400
    denied = await browser.get(callback, params={"error": "access_denied", "state": "y" * 43})
    assert denied.status_code == 400


async def test_the_consent_link_goes_on_only_for_its_own_signed_in_user(notes: Notes) -> None:
    flow = await start_flow(notes, "alice")
    base, flow_id = link_parts(flow["authorization_url"])
    assert base == notes.url
    page = f"/connections/flows/{flow_id}"
    store = notes.running.server.storage.connections
    # Nobody signed in: neither the flow nor its provider address.
    anonymous = await notes.http()
    assert (await anonymous.get(page)).status_code == 401
    assert (await anonymous.post(f"{page}/redirect")).status_code == 401
    # Another user: no such flow, for them.
    bob = await notes.http("bob")
    assert (await bob.get(page)).status_code == 404
    assert (await bob.post(f"{page}/redirect")).status_code == 404
    # The operator is no user.
    async with httpx.AsyncClient(base_url=notes.url, headers={"x-auth-scheme": "langsmith"}) as op:
        assert (await op.post(f"{page}/redirect")).status_code == 403
    # No consent page is public: the callback alone.
    async with httpx.AsyncClient(base_url=notes.url) as browser:
        assert (await browser.get(f"/connections/authorize/{flow_id}")).status_code == 401
        assert (await browser.post(f"/connections/authorize/{flow_id}")).status_code == 401
    stored = await store.get_flow(flow_id)
    assert stored is not None
    assert stored.status == "pending"
    # Its user sees what the console's page shows, then goes on.
    alice = await notes.http("alice")
    shown = (await alice.get(page)).json()
    assert shown["server"] == "notes"
    assert shown["description"] == "Your notes in Loopback Notes"
    assert (shown["user"], shown["agent"], shown["status"]) == ("alice", "notes-agent", "pending")
    assert shown["thread_id"] is None
    browser = await notes.browser()
    back = await notes.signed_in(flow["authorization_url"], "alice", browser)
    assert (await alice.get(page)).json()["status"] == "used"
    assert (await browser.get(back)).status_code == 200
    assert (await alice.get(page)).json()["status"] == "done"
    assert (await bob.get(page)).status_code == 404
    assert await store.get("alice", "notes") is not None
    assert await store.get("bob", "notes") is None


async def test_connection_api_needs_a_user(notes: Notes) -> None:
    anonymous = await notes.http()
    assert (await anonymous.get("/connections")).status_code == 401
    assert (await anonymous.delete("/connections/callback")).status_code == 401
    assert (await anonymous.delete("/connections")).status_code == 401
    assert (await anonymous.post("/connections/notes/authorize")).status_code == 401
    flow = f"/connections/flows/{'z' * 43}"
    assert (await anonymous.get(flow)).status_code == 401
    assert (await anonymous.post(f"{flow}/redirect")).status_code == 401


# -- where tokens never are ------------------------------------------------------------------


# Set in this test's own task: what its clients (the browser, the SDK) log is theirs, not
# the server's, whose requests and runs are served in tasks of their own.
THE_TEST = contextvars.ContextVar("the_test", default=False)


class ServerRecords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not THE_TEST.get()


async def test_no_token_or_code_anywhere_after_a_full_flow(
    notes: Notes, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.handler.addFilter(ServerRecords())
    THE_TEST.set(True)
    await notes.connect("alice")  # the catalog: whoami offered
    carol = notes.client("carol")
    thread_id = (await carol.threads.create())["thread_id"]
    value = interrupt_of(await ask(carol, notes, WHOAMI, thread_id))
    browser = await notes.browser()
    back = await notes.signed_in(value["authorization_url"], "carol", browser)
    query = parse_qs(urlsplit(back).query)
    assert (await browser.get(back)).status_code == 200
    assert await idle_answer(carol, thread_id) == "I am carol"
    auth = notes.provider.auth
    secrets = [*auth.access_tokens, *auth.refresh_tokens, query["code"][0], query["state"][0]]
    secrets += [cookie.value for cookie in browser.cookies.jar if cookie.value]
    assert len(secrets) >= 6
    storage = notes.running.server.storage
    events = await storage.events.read(thread_id, after=None)
    history = await carol.threads.get_history(thread_id, limit=100)
    async with httpx.AsyncClient(
        base_url=notes.url, headers={"x-auth-scheme": "langsmith"}
    ) as operator:
        metrics = (await operator.get("/metrics")).text
        listed = (await operator.get("/connections")).text
    mine = (await (await notes.http("carol")).get("/connections")).text
    places = {
        "logs": caplog.text + "".join(str(r.args) for r in caplog.records),
        "events": "".join(e.data.decode("utf-8", "replace") for e in events),
        "checkpoints": json.dumps(history, default=str),
        "metrics": metrics,
        "responses": listed + mine,
    }
    raw = b"".join(path.read_bytes() for path in (tmp_path / "data").rglob("*") if path.is_file())
    assert f"{notes.provider.issuer}/token" in places["logs"]  # the server's records are here
    for secret in secrets:
        for place, text in places.items():
            assert secret not in text, f"a secret in the {place}"
        assert secret.encode() not in raw, "a secret in the database files"
    # The token is there, sealed.
    assert await storage.connections.get("carol", "notes") is not None


async def test_a_callback_of_another_agent_is_refused(
    notes: Notes, tmp_path: Path, provider: OAuthProvider, idp_b: IdpBServer
) -> None:
    other_root = notes_project(tmp_path / "other-agent", provider, idp_b)
    async with running_server(other_root, tmp_path / "other-data") as other:
        flow = await start_flow(notes, "alice")
        browser = await notes.browser()
        back = await notes.signed_in(flow["authorization_url"], "alice", browser)
        # The same code and state, brought to the other agent's callback (same cookie path).
        query = urlsplit(back).query
        foreign = await browser.get(f"{other.url}/connections/callback?{query}")
        assert foreign.status_code == 400
        assert "unknown or forged" in foreign.text
        assert await other.server.storage.connections.get("alice", "notes") is None
        # Still good where it belongs.
        assert (await browser.get(back)).status_code == 200


async def test_expired_requests_are_refused(notes: Notes) -> None:
    store = notes.running.server.storage.connections
    past = datetime.now(UTC) - timedelta(minutes=1)
    # A link opened too late.
    flow = await start_flow(notes, "alice")
    stored = await store.get_flow(flow["flow_id"])
    assert stored is not None
    assert await store.advance_flow(replace(stored, expires_at=past), from_status="pending")
    alice = await notes.http("alice")
    shown = await alice.get(f"/connections/flows/{flow['flow_id']}")
    assert shown.json()["status"] == "expired"
    sent = await alice.post(f"/connections/flows/{flow['flow_id']}/redirect")
    assert sent.status_code == 400
    assert "expired" in sent.json()["detail"]
    # A sign-in that came back too late.
    flow = await start_flow(notes, "alice")
    browser = await notes.browser()
    back = await notes.signed_in(flow["authorization_url"], "alice", browser)
    stored = await store.get_flow(flow["flow_id"])
    assert stored is not None
    assert await store.advance_flow(replace(stored, expires_at=past), from_status="redirected")
    late = await browser.get(back)
    assert late.status_code == 400
    assert "expired" in late.text
    assert await store.get("alice", "notes") is None


@pytest.mark.sandbox
async def test_no_token_in_the_environment_of_the_agents_sandbox(
    tmp_path: Path, provider: OAuthProvider, idp_b: IdpBServer, sandbox_dir: Path
) -> None:
    root = notes_project(tmp_path / "notes-agent", provider, idp_b)
    toml = (root / "agent.toml").read_text()
    (root / "agent.toml").write_text(
        toml.replace("[auth]", '[sandbox]\nprovider = "platform_sandbox"\n[auth]')
    )
    with (root / ".env").open("a") as env:
        env.write("PLATFORM_API_KEY=platform-key\n")
    async with running_server(root, tmp_path / "data") as running, AsyncExitStack() as stack:
        notes = Notes(running, provider, idp_b, stack)
        await notes.connect("alice")
        alice = notes.client("alice")
        # The tool as alice, then what every process of the sandbox has in its environment.
        shown = "env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'"
        script = f"{call('whoami')}\n{call('execute', command=shown)}\n@say {{last_tool_result}}"
        said = answer(await ask(alice, notes, script))
        assert "PATH=" in said  # the sandbox's environment was read
        auth = provider.auth
        secrets = [*auth.access_tokens, *auth.refresh_tokens]
        assert len(secrets) >= 2
        for secret in secrets:
            assert secret not in said, "a token in the sandbox's environment"


async def test_a_call_as_the_user_is_traced_and_never_shows_the_token(notes: Notes) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    from agentctl.observability import configure_tracing, shutdown_tracing

    await notes.connect("alice")
    exporter = InMemorySpanExporter()
    configure_tracing(None, "agentctl-test", capture_content=True, exporter=exporter)
    try:
        assert answer(await ask(notes.client("alice"), notes, WHOAMI)) == "I am alice"
    finally:
        shutdown_tracing()
    spans = exporter.get_finished_spans()
    [tool] = [span for span in spans if span.name == "execute_tool whoami"]
    [called] = [span for span in spans if span.name == "tools/call whoami"]
    assert called.kind == SpanKind.CLIENT
    assert called.parent is not None
    assert called.parent.span_id == tool.context.span_id
    assert dict(called.attributes or {}) == {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "whoami",
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "agentctl.mcp.server": "notes",
        "server.address": "127.0.0.1",
        "server.port": urlsplit(notes.provider.mcp_url).port,
    }
    # Even with content captured, no span holds a token of the user's.
    exported = json.dumps([dict(span.attributes or {}) for span in spans], default=str)
    assert "alice" in exported  # the tool's result
    for secret in [*notes.provider.auth.access_tokens, *notes.provider.auth.refresh_tokens]:
        assert secret not in exported
