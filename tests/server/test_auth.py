"""Who may call the server: Bearer tokens under `[auth]` (idp_a, idp_b, oidc), the
deployment key, the development UI's bypass, and what a client sees when it is refused."""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from langgraph_sdk.errors import (
    APIStatusError,
    AuthenticationError,
    ConflictError,
    InternalServerError,
    PermissionDeniedError,
)
from langgraph_sdk.schema import StreamPart

from agentctl.auth import authenticator_for
from agentctl.project.model import AuthConfig
from agentctl.server.access import AccessPolicy
from agentctl.testing.identity import IdpAServer, IdpBServer, OidcIssuer
from agentctl.testing.signing import new_rsa_key
from tests.conftest import eventually
from tests.server.conftest import (
    ALICE,
    BOB,
    Running,
    TwoUsers,
    running_server,
    sdk,
    user,
    with_auth,
)

Request = Callable[[], Awaitable[Any]]
DEPLOY_KEY = "deploy-key"
SIGN_IN = "sign in: send Authorization: Bearer <token>"
DEV_UI = {"x-auth-scheme": "langsmith"}


async def collect(stream: Any) -> list[StreamPart]:
    return [part async for part in stream]


def last_answer(values: Any) -> str:
    return str(values["messages"][-1]["content"])


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


async def refused(request: Request) -> dict[str, Any]:
    """The JSON body of the 401 `request` gets, checked for what every refusal carries.
    (The SDK raises `AuthenticationError`, or a plain `httpx.HTTPStatusError` from
    `runs.wait`.)"""
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await request()
    response = caught.value.response
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.headers["content-type"].startswith("application/json")
    body = json.loads(await response.aread())
    assert set(body) == {"detail"}
    return dict(body)


def detail(error: APIStatusError) -> str:
    """The `detail` of an error's JSON body."""
    assert isinstance(error.body, dict), error.body
    return str(error.body["detail"])


# -- [auth]: Bearer tokens -----------------------------------------------------------------


async def test_without_a_token_every_resource_is_401(two_users: TwoUsers) -> None:
    nobody = two_users.running.client  # no token, no key
    thread_id = str(uuid4())
    requests: dict[str, Request] = {
        "threads.create": lambda: nobody.threads.create(),
        "threads.search": lambda: nobody.threads.search(),
        "threads.get": lambda: nobody.threads.get(thread_id),
        "threads.count": lambda: nobody.threads.count(),
        "runs.create": lambda: nobody.runs.create(None, "demo", input=user("hi")),
        "runs.wait": lambda: nobody.runs.wait(
            thread_id, "demo", input=user("hi"), if_not_exists="create"
        ),
        "runs.stream": lambda: collect(nobody.runs.stream(None, "demo", input=user("hi"))),
        "runs.list": lambda: nobody.runs.list(thread_id),
        "crons.search": lambda: nobody.crons.search(),
        "store.put_item": lambda: nobody.store.put_item(["notes"], "k", {"v": 1}),
        "store.get_item": lambda: nobody.store.get_item(["notes"], "k"),
        "store.search_items": lambda: nobody.store.search_items([]),
        "store.list_namespaces": lambda: nobody.store.list_namespaces(),
        "assistants.search": lambda: nobody.assistants.search(),
        "assistants.get": lambda: nobody.assistants.get("demo"),
    }
    for name, request in requests.items():
        assert await refused(request) == {"detail": SIGN_IN}, name

    async with httpx.AsyncClient(base_url=two_users.running.url) as http:
        public = (
            "/ok",
            "/info",
            "/openapi.json",
            "/docs",
            "/docs/docs.js",
            "/ui/",
            "/ui/console.js",
        )
        for path in public:
            response = await http.get(path)
            assert response.status_code == 200, (path, response.text)
        assert (await http.get("/ok")).json() == {"ok": True}
        metrics = await http.get("/metrics")
        assert metrics.status_code == 401
        assert metrics.json() == {"detail": SIGN_IN}

    # Nothing was created on the way: the development UI (unscoped) sees no thread.
    studio = two_users.client(headers=DEV_UI)
    assert await studio.threads.search() == []
    assert (await studio.store.search_items(["notes"]))["items"] == []


async def test_forged_expired_and_malformed_tokens_are_401(two_users: TwoUsers) -> None:
    idp = two_users.idp
    assert await two_users.alice.threads.search() == []  # the key set is fetched and kept
    stranger = new_rsa_key()
    valid = idp.mint(ALICE)
    header, _, signature = valid.split(".")
    altered = f"{header}.{_b64({'sub': BOB, 'iss': idp.url, 'exp': 9999999999})}.{signature}"
    tokens = {
        "expired": idp.mint(ALICE, expires_in=-120),
        "not valid yet": idp.mint(ALICE, not_before=600),
        "signed with another key": idp.mint(ALICE, key=stranger),
        "unknown key id": idp.mint(ALICE, kid="key-made-up", key=stranger),
        "alg none": idp.mint(ALICE, alg="none"),
        "HS256 keyed with the public key": idp.mint(ALICE, alg="HS256", key=idp.public_pem),
        "RS512 instead of RS256": idp.mint(ALICE, alg="RS512"),
        "claims altered after signing": altered,
        "no exp": idp.mint(ALICE, extra_claims={"exp": None}),
        "no sub": idp.mint(ALICE, extra_claims={"sub": None}),
        "empty sub": idp.mint(ALICE, extra_claims={"sub": ""}),
        "not a JWT": "not-a-jwt",
        "three garbage parts": "a.b.c",
        "long garbage": "x" * 9_000,
    }
    for name, token in tokens.items():
        client = two_users.client(token=token)
        detail = (await refused(client.threads.search))["detail"]
        assert detail != SIGN_IN, name  # it says what is wrong with the token
        assert token[:40] not in detail, name  # and never echoes it
        with pytest.raises(AuthenticationError):  # nor can it create anything
            await client.threads.create(metadata={"forged": name})

    for authorization in ("Basic YWxpY2U6c2VjcmV0", "Bearer", "Token abc"):
        client = two_users.client(headers={"Authorization": authorization})
        await refused(client.threads.search)

    studio = two_users.client(headers=DEV_UI)
    assert await studio.threads.search() == []  # not one forged request got through
    assert await two_users.alice.threads.search() == []  # and the real user still gets in


async def test_an_idp_b_outage_is_503_not_401(two_users: TwoUsers) -> None:
    idp, alice = two_users.idp, two_users.alice
    idp.outage = True  # before the server ever fetched the key set
    with pytest.raises(InternalServerError) as down:
        await alice.threads.create()
    assert down.value.status_code == 503
    assert "identity provider" in detail(down.value)
    assert "try again" in detail(down.value)

    idp.outage = False
    created = await alice.threads.create()
    assert created["metadata"] == {"owner": ALICE}

    # The provider rotates its key and goes down: a token signed with the new key cannot be
    # checked (503), while tokens of the kept keys still are.
    idp.rotate()
    idp.outage = True
    rotated = two_users.client(token=idp.mint(ALICE))
    with pytest.raises(InternalServerError) as unknown_key:
        await rotated.threads.search()
    assert unknown_key.value.status_code == 503
    assert [t["thread_id"] for t in await alice.threads.search()] == [created["thread_id"]]
    studio = two_users.client(headers=DEV_UI)
    assert len(await studio.threads.search()) == 1  # the refused requests created nothing


@pytest.mark.slow
async def test_idp_a_outage_is_503_and_a_revoked_session_ends(
    demo: Path, tmp_path: Path, idp_a: IdpAServer
) -> None:
    project = with_auth(demo, tmp_path / "idp-a", {"provider": "idp_a"}, idp_a.env)
    async with running_server(project, tmp_path / "data") as running, AsyncExitStack() as stack:
        # The server's own policy, with validated sessions trusted for 0.2 s only.
        first = running.server.access.authenticator
        assert first is not None
        running.server.access = AccessPolicy(
            authenticator=authenticator_for(AuthConfig("idp_a"), idp_a.env, cache_ttl=0.2),
            dev_ui=True,
        )
        await first.aclose()

        idp_a.outage = True
        down = sdk(running.url, token=idp_a.issue(ALICE))
        stack.push_async_callback(down.aclose)
        with pytest.raises(InternalServerError) as unavailable:
            await down.threads.create()
        assert unavailable.value.status_code == 503
        assert "try again" in detail(unavailable.value)
        idp_a.outage = False

        token = idp_a.issue(ALICE)
        alice = sdk(running.url, token=token)
        stack.push_async_callback(alice.aclose)
        thread = await alice.threads.create()
        assert thread["metadata"] == {"owner": ALICE}

        idp_a.revoke(token)

        async def signed_out() -> bool:
            try:
                await alice.threads.get(thread["thread_id"])
            except AuthenticationError:
                return True
            return False

        await eventually(signed_out, seconds=5.0)
        with pytest.raises(AuthenticationError) as ended:
            await alice.threads.get(thread["thread_id"])
        assert "sign in again" in detail(ended.value)
        fresh = sdk(running.url, token=idp_a.issue(ALICE))  # a new session of the same user
        stack.push_async_callback(fresh.aclose)
        assert (await fresh.threads.get(thread["thread_id"]))["metadata"] == {"owner": ALICE}


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["idp_a", "idp_b", "oidc"])
async def test_a_valid_token_works_end_to_end(
    provider: str, request: pytest.FixtureRequest, demo: Path, tmp_path: Path
) -> None:
    auth: dict[str, str] = {"provider": provider}
    env: dict[str, str] = {}
    if provider == "idp_a":
        idp_a: IdpAServer = request.getfixturevalue("idp_a")
        env, token = idp_a.env, idp_a.issue(ALICE)
    elif provider == "idp_b":
        idp_b: IdpBServer = request.getfixturevalue("idp_b")
        env, token = idp_b.env, idp_b.mint(ALICE)
    else:
        oidc: OidcIssuer = request.getfixturevalue("oidc")
        auth.update(issuer=oidc.issuer, audience=oidc.audience)
        token = oidc.mint(ALICE)
    project = with_auth(demo, tmp_path / provider, auth, env)
    async with running_server(project, tmp_path / "data") as running:
        await refused(lambda: running.client.threads.create())
        alice = sdk(running.url, token=token)
        try:
            thread = await alice.threads.create(metadata={"topic": provider})
            assert thread["metadata"] == {"topic": provider, "owner": ALICE}
            parts = await collect(
                alice.runs.stream(
                    thread["thread_id"], "demo", input=user("@say {system}"), stream_mode="values"
                )
            )
            assert [parts[0].event, parts[-1].event] == ["metadata", "end"]
            # The run knows its user: their memory (seeded from user/AGENTS.md) is preloaded.
            assert "# About the user" in last_answer(parts[-2].data)
            done = await alice.threads.get(thread["thread_id"])
            assert done["status"] == "idle"
            assert [t["thread_id"] for t in await alice.threads.search()] == [thread["thread_id"]]
            assert (await alice.assistants.get("demo"))["graph_id"] == "demo"
        finally:
            await alice.aclose()


# -- the deployment key ----------------------------------------------------------------------


async def test_the_deployment_key_is_required(agent: Running) -> None:
    agent.server.access = AccessPolicy(api_key=DEPLOY_KEY)
    nobody = agent.client
    assert "x-api-key" in (await refused(nobody.threads.search))["detail"]
    async with AsyncExitStack() as stack:
        wrong = sdk(agent.url, api_key="not-the-key")
        bearer = sdk(agent.url, token="any-token")  # no [auth]: a token is no credential
        operator = sdk(agent.url, api_key=DEPLOY_KEY)
        for client in (wrong, bearer, operator):
            stack.push_async_callback(client.aclose)
        assert "not this deployment's key" in (await refused(wrong.threads.search))["detail"]
        assert "x-api-key" in (await refused(bearer.threads.search))["detail"]
        await refused(lambda: nobody.store.put_item(["notes"], "k", {"v": 1}))

        thread = await operator.threads.create(metadata={"by": "operator"})
        assert thread["metadata"] == {"by": "operator"}  # the operator is no user
        values = await operator.runs.wait(thread["thread_id"], "demo", input=user("hi"))
        assert last_answer(values) == "scripted reply to: hi"
        await operator.store.put_item(["notes"], "k", {"v": 1})
        assert (await operator.store.get_item(["notes"], "k"))["value"] == {"v": 1}
        created = await operator.assistants.create("demo", name="by the operator")
        assert created["name"] == "by the operator"

        async with httpx.AsyncClient(base_url=agent.url) as http:
            for path in ("/ok", "/info"):
                assert (await http.get(path)).status_code == 200
            assert (await http.get("/metrics")).status_code == 401
            wrong_key = await http.get("/metrics", headers={"x-api-key": "not-the-key"})
            assert wrong_key.status_code == 401
            metrics = await http.get("/metrics", headers={"x-api-key": DEPLOY_KEY})
            assert metrics.status_code == 200
            assert metrics.headers["content-type"].startswith("text/plain")
            # The development UI's header is nothing to the production policy.
            studio = await http.post("/threads/search", json={}, headers=DEV_UI)
            assert studio.status_code == 401

            agent.server.access = AccessPolicy(api_key=DEPLOY_KEY, dev_ui=True)
            studio = await http.post("/threads/search", json={}, headers=DEV_UI)
            assert studio.status_code == 200
            assert [t["thread_id"] for t in studio.json()] == [thread["thread_id"]]
            other = await http.post(
                "/threads/search", json={}, headers={"x-auth-scheme": "something-else"}
            )
            assert other.status_code == 401


async def test_the_key_is_the_operator_and_a_token_is_a_user(two_users: TwoUsers) -> None:
    server = two_users.running.server
    server.access = replace(server.access, api_key=DEPLOY_KEY, dev_ui=False)
    mine = await two_users.alice.threads.create()
    theirs = await two_users.bob.threads.create()
    operator = two_users.client(api_key=DEPLOY_KEY)
    everything = {t["thread_id"] for t in await operator.threads.search(limit=100)}
    assert everything == {mine["thread_id"], theirs["thread_id"]}
    assert await operator.threads.count() == 2
    assert (await operator.threads.get(mine["thread_id"]))["metadata"] == {"owner": ALICE}
    assert [t["thread_id"] for t in await two_users.alice.threads.search()] == [mine["thread_id"]]

    # A token scopes the request to its user, whatever key comes with it.
    both = two_users.client(token=two_users.idp.mint(ALICE), api_key=DEPLOY_KEY)
    assert [t["thread_id"] for t in await both.threads.search()] == [mine["thread_id"]]

    await refused(lambda: two_users.running.client.threads.search())
    await refused(lambda: two_users.client(headers=DEV_UI).threads.search())
    await refused(lambda: two_users.client(api_key="not-the-key").threads.search())

    async with httpx.AsyncClient(base_url=two_users.running.url) as http:
        token = {"Authorization": f"Bearer {two_users.idp.mint(ALICE)}"}
        as_user = await http.get("/metrics", headers=token)
        assert as_user.status_code == 403
        assert "operator" in as_user.json()["detail"]
        assert (await http.get("/metrics", headers={"x-api-key": DEPLOY_KEY})).status_code == 200


async def test_the_dev_ui_bypass_works_only_when_on(two_users: TwoUsers) -> None:
    thread = await two_users.alice.threads.create()
    studio = two_users.client(headers=DEV_UI)
    # On (agentctl dev): unscoped, with no user, so no user memory.
    assert [t["thread_id"] for t in await studio.threads.search()] == [thread["thread_id"]]
    values = await studio.runs.wait(None, "demo", input=user("@say {system}"))
    assert "You are the demo agent." in last_answer(values)
    assert "# About the user" not in last_answer(values)

    server = two_users.running.server
    server.access = replace(server.access, dev_ui=False)
    await refused(lambda: studio.threads.search())
    assert [t["thread_id"] for t in await two_users.alice.threads.search()] == [thread["thread_id"]]


async def test_users_read_assistants_but_only_the_operator_changes_them(
    two_users: TwoUsers,
) -> None:
    server = two_users.running.server
    server.access = replace(server.access, api_key=DEPLOY_KEY)
    operator = two_users.client(api_key=DEPLOY_KEY)
    extra = await operator.assistants.create("demo", name="extra")
    alice = two_users.alice
    assert (await alice.assistants.get("demo"))["graph_id"] == "demo"
    found = {a["assistant_id"] for a in await alice.assistants.search(limit=100)}
    assert extra["assistant_id"] in found
    assert (await alice.assistants.get(extra["assistant_id"]))["name"] == "extra"

    extra_id = extra["assistant_id"]
    denied: dict[str, Request] = {
        "create": lambda: alice.assistants.create("demo", name="mine"),
        "update": lambda: alice.assistants.update(extra_id, name="renamed"),
        "delete": lambda: alice.assistants.delete(extra_id),
        "set_latest": lambda: alice.assistants.set_latest(extra_id, 1),
        "update the agent": lambda: alice.assistants.update("demo", name="renamed"),
        "delete the agent": lambda: alice.assistants.delete("demo"),
    }
    for name, request in denied.items():
        with pytest.raises(PermissionDeniedError) as forbidden:
            await request()
        assert "operator" in detail(forbidden.value), name
    assert (await alice.assistants.get(extra_id))["name"] == "extra"
    assert len(await operator.assistants.search(limit=100)) == 2

    renamed = await operator.assistants.update(extra_id, name="renamed")
    assert renamed["name"] == "renamed"
    with pytest.raises(ConflictError):
        await operator.assistants.delete("demo")  # the agent itself stays
    await operator.assistants.delete(extra_id)
    assert len(await alice.assistants.search(limit=100)) == 1
