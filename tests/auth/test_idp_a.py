"""idp_a: session tokens checked by asking the provider, against a real loopback provider."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentctl.auth import AuthError, AuthUnavailable, Identity, IdpAAuthenticator
from agentctl.testing.identity import IdpAServer
from agentctl.testing.serving import serve


@pytest.fixture
async def auth(idp_a: IdpAServer) -> AsyncIterator[IdpAAuthenticator]:
    authenticator = IdpAAuthenticator(idp_a.url, idp_a.publishable_key)
    yield authenticator
    await authenticator.aclose()


async def test_a_live_session_is_the_users_identity(
    idp_a: IdpAServer, auth: IdpAAuthenticator
) -> None:
    token = idp_a.issue("user-1")
    assert await auth.authenticate(token) == Identity(id="user-1", provider="idp_a")
    assert await auth.authenticate(f"  {token} ") == Identity(id="user-1", provider="idp_a")


async def test_a_second_check_within_the_ttl_does_not_ask_the_provider(
    idp_a: IdpAServer, auth: IdpAAuthenticator
) -> None:
    token = idp_a.issue("user-1")
    await auth.authenticate(token)
    await auth.authenticate(token)
    assert idp_a.calls == 1
    await auth.authenticate(idp_a.issue("user-2"))
    assert idp_a.calls == 2


async def test_a_revoked_session_is_refused_once_the_ttl_has_passed(idp_a: IdpAServer) -> None:
    auth = IdpAAuthenticator(idp_a.url, idp_a.publishable_key, cache_ttl=0.2)
    try:
        token = idp_a.issue("user-1")
        assert (await auth.authenticate(token)).id == "user-1"
        idp_a.revoke(token)
        assert (await auth.authenticate(token)).id == "user-1"  # still trusted: cached
        assert idp_a.calls == 1
        await asyncio.sleep(0.25)
        with pytest.raises(AuthError, match="sign in again") as caught:
            await auth.authenticate(token)
        assert idp_a.calls == 2
        assert caught.value.status == 401
        assert token not in str(caught.value)
    finally:
        await auth.aclose()


async def test_a_rejected_token_is_remembered_briefly(
    idp_a: IdpAServer, auth: IdpAAuthenticator
) -> None:
    for _ in range(3):
        with pytest.raises(AuthError, match="not accepted by the identity provider"):
            await auth.authenticate("never-issued")
    assert idp_a.calls == 1


async def test_concurrent_checks_of_one_token_share_one_call(
    idp_a: IdpAServer, auth: IdpAAuthenticator
) -> None:
    idp_a.delay = 0.05
    token = idp_a.issue("user-1")
    identities = await asyncio.gather(*(auth.authenticate(token) for _ in range(10)))
    assert {i.id for i in identities} == {"user-1"}
    assert idp_a.calls == 1


@pytest.mark.parametrize(
    "token",
    ["", "   ", "two words", "caf\u00e9", "tab\there", "x" * 20_000],
    ids=["empty", "blank", "space", "non-ascii", "control", "huge"],
)
async def test_a_token_that_cannot_be_one_is_refused_without_asking(
    idp_a: IdpAServer, auth: IdpAAuthenticator, token: str
) -> None:
    with pytest.raises(AuthError):
        await auth.authenticate(token)
    assert idp_a.calls == 0


async def test_an_outage_is_unavailable_not_allowed_and_not_cached(
    idp_a: IdpAServer, auth: IdpAAuthenticator
) -> None:
    token = idp_a.issue("user-1")
    idp_a.outage = True
    with pytest.raises(AuthUnavailable, match=r"at 127\.0\.0\.1:\d+ failed \(HTTP 503\)") as caught:
        await auth.authenticate(token)
    assert caught.value.status == 503
    idp_a.outage = False
    assert (await auth.authenticate(token)).id == "user-1"


async def test_a_refused_publishable_key_is_a_server_problem(idp_a: IdpAServer) -> None:
    auth = IdpAAuthenticator(idp_a.url, "pk_wrong_value")
    try:
        with pytest.raises(AuthUnavailable) as caught:
            await auth.authenticate(idp_a.issue("user-1"))
    finally:
        await auth.aclose()
    assert "IDP_A_PUBLISHABLE_DEFAULT_KEY" in str(caught.value)
    assert "pk_wrong_value" not in str(caught.value)


async def test_a_provider_that_does_not_listen_is_unavailable(closed_port: int) -> None:
    auth = IdpAAuthenticator(f"http://127.0.0.1:{closed_port}", "pk")
    try:
        with pytest.raises(AuthUnavailable, match="did not answer — try again"):
            await auth.authenticate("some-token")
    finally:
        await auth.aclose()


async def test_a_slow_provider_is_unavailable(idp_a: IdpAServer) -> None:
    idp_a.delay = 0.5
    client = httpx.AsyncClient(timeout=0.1)
    auth = IdpAAuthenticator(idp_a.url, idp_a.publishable_key, client=client)
    try:
        with pytest.raises(AuthUnavailable, match="did not answer in time"):
            await auth.authenticate(idp_a.issue("user-1"))
    finally:
        await auth.aclose()
        assert not client.is_closed  # borrowed, so left open
        await client.aclose()


@dataclass
class Answer:
    status: int = 200
    body: bytes = b"{}"


@pytest.fixture(scope="module")
def odd_answer() -> Iterator[tuple[str, Answer]]:
    """A provider answering whatever the test sets, at its URL."""
    answer = Answer()

    async def user(request: Request) -> Response:
        return Response(answer.body, status_code=answer.status, media_type="application/json")

    with serve(Starlette(routes=[Route("/auth/v1/user", user)])) as port:
        yield f"http://127.0.0.1:{port}", answer


@pytest.mark.parametrize(
    ("status", "body", "error", "message"),
    [
        (200, b"<html>sign in</html>", AuthUnavailable, "without a user id"),
        (200, b'{"email": "a@example.com"}', AuthUnavailable, "without a user id"),
        (200, b'{"id": 42}', AuthUnavailable, "without a user id"),
        (500, b"{}", AuthUnavailable, r"failed \(HTTP 500\)"),
        (429, b"{}", AuthUnavailable, r"failed \(HTTP 429\)"),
        (302, b"", AuthUnavailable, "check that IDP_A_URL"),
        (401, b'{"msg": "token is expired"}', AuthError, "sign in again"),
        (404, b'{"msg": "User not found"}', AuthError, "sign in again"),
        (422, b"{}", AuthError, "sign in again"),
    ],
)
async def test_each_answer_of_the_provider_has_one_meaning(
    odd_answer: tuple[str, Answer],
    status: int,
    body: bytes,
    error: type[Exception],
    message: str,
) -> None:
    url, answer = odd_answer
    answer.status, answer.body = status, body
    auth = IdpAAuthenticator(url, "pk")
    try:
        with pytest.raises(error, match=message):
            await auth.authenticate("a-session-token")
    finally:
        await auth.aclose()
