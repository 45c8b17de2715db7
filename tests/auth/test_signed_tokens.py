"""idp_b and oidc: signed JWTs verified against the provider's key set, for each provider alike.

Every token here is made by a real loopback provider with real RSA keys (or crafted the way an
attacker would), and checked by the real authenticator over HTTP.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from agentctl.auth import (
    Authenticator,
    AuthError,
    AuthUnavailable,
    Identity,
    IdpBAuthenticator,
    OidcAuthenticator,
)
from agentctl.testing.identity import IdpBServer, OidcIssuer, new_rsa_key


@dataclass
class Case:
    """One provider under test: its server, an authenticator for it, and its provider name."""

    name: str
    server: IdpBServer | OidcIssuer
    auth: Authenticator

    def mint(self, sub: str = "user-1", **options: Any) -> str:
        return self.server.mint(sub, **options)


def authenticator(server: IdpBServer | OidcIssuer, **options: Any) -> Authenticator:
    if isinstance(server, IdpBServer):
        return IdpBAuthenticator(server.secret_key, api_url=server.api_url, **options)
    return OidcAuthenticator(server.issuer, server.audience, **options)


@pytest.fixture(params=["idp_b", "oidc"])
async def case(
    request: pytest.FixtureRequest, idp_b: IdpBServer, oidc: OidcIssuer
) -> AsyncIterator[Case]:
    server = idp_b if request.param == "idp_b" else oidc
    auth = authenticator(server)
    yield Case(request.param, server, auth)
    await auth.aclose()


@pytest.fixture(params=["idp_b", "oidc"])
def fresh_server(request: pytest.FixtureRequest) -> Iterator[IdpBServer | OidcIssuer]:
    """A provider of its own, for tests that change its keys."""
    with IdpBServer() if request.param == "idp_b" else OidcIssuer() as server:
        yield server


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _tamper_signature(token: str) -> str:
    head, payload, signature = token.split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
    raw[10] ^= 0x01
    return f"{head}.{payload}.{_b64(bytes(raw))}"


def _signed_payload(case: Case, payload: bytes) -> str:
    """A token whose signature is genuine but whose payload is `payload`, not claims."""
    server = case.server
    return jwt.PyJWS().encode(
        payload, server.keys[server.kid], algorithm="RS256", headers={"kid": server.kid}
    )


def _swap_subject(token: str) -> str:
    head, _, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "==="))
    claims["sub"] = "admin"
    return f"{head}.{_b64(json.dumps(claims).encode())}.{signature}"


async def test_a_valid_token_is_its_subject(case: Case) -> None:
    assert await case.auth.authenticate(case.mint("user-1")) == Identity("user-1", case.name)
    assert await case.auth.authenticate(case.mint("user-2")) == Identity("user-2", case.name)
    assert case.server.jwks_fetches == 1  # the key set is fetched once, then cached


async def test_a_little_clock_skew_is_tolerated(case: Case) -> None:
    assert (await case.auth.authenticate(case.mint(expires_in=-2))).id == "user-1"
    assert (await case.auth.authenticate(case.mint(not_before=2))).id == "user-1"


_KID_NUMBER = _b64(b'{"alg": "RS256", "kid": 1}')
Forge = Callable[[Case, rsa.RSAPrivateKey], str]

# name -> (how to make the token, what the error says)
FORGERIES: dict[str, tuple[Forge, str]] = {
    "signature tampered": (lambda c, _: _tamper_signature(c.mint()), "signature does not verify"),
    "claims altered": (lambda c, _: _swap_subject(c.mint()), "signature does not verify"),
    "expired": (lambda c, _: c.mint(expires_in=-60), "has expired — sign in again"),
    "not yet valid": (lambda c, _: c.mint(not_before=120), "not valid yet"),
    "issued in the future": (lambda c, _: c.mint(extra_claims={"iat": 10**10}), "not valid yet"),
    "hs256 keyed with the public key": (
        lambda c, _: c.mint(alg="HS256", key=c.server.public_pem),
        "algorithm is not accepted",
    ),
    "alg none": (lambda c, _: c.mint(alg="none"), "algorithm is not accepted"),
    "key not in the set": (lambda c, key: c.mint(key=key), "signature does not verify"),
    "unknown kid": (lambda c, key: c.mint(kid="made-up", key=key), "unknown signing key"),
    "no exp": (lambda c, _: c.mint(extra_claims={"exp": None}), "has no exp claim"),
    "no sub": (lambda c, _: c.mint(extra_claims={"sub": None}), "has no sub claim"),
    "empty sub": (lambda c, _: c.mint(""), "names no user"),
    "sub not a string": (
        lambda c, _: c.mint(extra_claims={"sub": 7}),
        "sub claim is not a string",
    ),
    "garbage": (lambda c, _: "not-a-token", "malformed"),
    "two segments": (lambda c, _: ".".join(c.mint().split(".")[:2]), "malformed"),
    "four segments": (lambda c, _: c.mint() + ".x", "malformed"),
    "bad base64": (lambda c, _: "###.@@@.!!!", "malformed"),
    "header not json": (lambda c, _: f"{_b64(b'not json')}.e30.c2ln", "malformed"),
    "header a list": (lambda c, _: f"{_b64(b'[1]')}.e30.c2ln", "malformed"),
    "claims not json": (lambda c, _: _signed_payload(c, b"nope"), "malformed"),
    "claims a list": (lambda c, _: _signed_payload(c, b'["sub"]'), "malformed"),
    "kid not a string": (lambda c, _: f"{_KID_NUMBER}.e30.c2ln", "malformed"),
}


@pytest.mark.parametrize("forgery", FORGERIES)
async def test_a_bad_token_is_refused_with_what_is_wrong(
    case: Case, stranger_key: rsa.RSAPrivateKey, forgery: str
) -> None:
    forge, message = FORGERIES[forgery]
    token = forge(case, stranger_key)
    with pytest.raises(AuthError, match=message) as caught:
        await case.auth.authenticate(token)
    assert caught.value.status == 401
    assert token not in str(caught.value)


async def test_only_rs256_is_accepted_by_idp_b(idp_b: IdpBServer) -> None:
    auth = authenticator(idp_b)
    try:
        for alg in ("RS384", "PS256"):  # real signatures by the provider's own key
            with pytest.raises(AuthError, match=r"not accepted \(only RS256\)"):
                await auth.authenticate(idp_b.mint("user-1", alg=alg))
    finally:
        await auth.aclose()


@pytest.mark.slow
async def test_a_rotated_key_is_fetched_once_and_made_up_kids_are_rate_limited(
    fresh_server: IdpBServer | OidcIssuer, stranger_key: rsa.RSAPrivateKey
) -> None:
    server = fresh_server
    spare = new_rsa_key()  # made now: key generation is slow enough to matter below
    auth = authenticator(server, min_refresh_interval=0.3)
    try:
        await auth.authenticate(server.mint("user-1"))
        assert server.jwks_fetches == 1
        server.rotate()
        assert (await auth.authenticate(server.mint("user-2"))).id == "user-2"
        assert server.jwks_fetches == 2  # one refresh for the new kid
        with pytest.raises(AuthError, match="unknown signing key"):
            await auth.authenticate(server.mint("user-3", kid="made-up", key=stranger_key))
        server.rotate(spare)
        with pytest.raises(AuthError, match="unknown signing key"):
            await auth.authenticate(server.mint("user-4"))
        assert server.jwks_fetches == 2  # within the rate limit: no refetch for either
        await asyncio.sleep(0.3)
        assert (await auth.authenticate(server.mint("user-4"))).id == "user-4"
        assert server.jwks_fetches == 3
    finally:
        await auth.aclose()


@pytest.mark.slow
async def test_a_failed_refresh_for_a_new_key_is_unavailable_not_a_forgery(
    fresh_server: IdpBServer | OidcIssuer,
) -> None:
    server = fresh_server
    auth = authenticator(server, min_refresh_interval=0.2)
    try:
        first = server.kid
        await auth.authenticate(server.mint("user-1"))
        server.rotate()
        server.outage = True
        for _ in range(2):  # the second is within the rate limit: no fetch, same answer
            with pytest.raises(AuthUnavailable, match="HTTP 503"):
                await auth.authenticate(server.mint("user-2"))
        assert server.jwks_fetches == 2
        assert (await auth.authenticate(server.mint("user-1", kid=first))).id == "user-1"
        server.outage = False
        await asyncio.sleep(0.25)
        assert (await auth.authenticate(server.mint("user-2"))).id == "user-2"
    finally:
        await auth.aclose()


async def test_the_key_set_is_fetched_again_after_its_ttl(case: Case) -> None:
    auth = authenticator(case.server, jwks_ttl=0.1)
    try:
        await auth.authenticate(case.mint())
        await asyncio.sleep(0.15)
        await auth.authenticate(case.mint())
        assert case.server.jwks_fetches == 2
    finally:
        await auth.aclose()


async def test_concurrent_first_checks_fetch_the_key_set_once(case: Case) -> None:
    tokens = [case.mint(f"user-{i}") for i in range(10)]
    identities = await asyncio.gather(*(case.auth.authenticate(t) for t in tokens))
    assert [i.id for i in identities] == [f"user-{i}" for i in range(10)]
    assert case.server.jwks_fetches == 1


async def test_an_outage_is_unavailable_then_recovers(case: Case) -> None:
    token = case.mint()
    case.server.outage = True
    with pytest.raises(AuthUnavailable, match="HTTP 503") as caught:
        await case.auth.authenticate(token)
    assert caught.value.status == 503
    case.server.outage = False
    assert (await case.auth.authenticate(token)).id == "user-1"


async def test_a_provider_that_does_not_listen_is_unavailable(
    idp_b: IdpBServer, closed_port: int
) -> None:
    for auth in (
        IdpBAuthenticator("sk", api_url=f"http://127.0.0.1:{closed_port}/v1"),
        OidcAuthenticator(f"http://127.0.0.1:{closed_port}", "aud"),
    ):
        try:
            with pytest.raises(AuthUnavailable, match=f"127.0.0.1:{closed_port} did not answer"):
                await auth.authenticate(idp_b.mint("user-1"))
        finally:
            await auth.aclose()


async def test_idp_b_sends_the_secret_key_and_names_it_when_refused(idp_b: IdpBServer) -> None:
    auth = IdpBAuthenticator("sk_not_the_secret", api_url=idp_b.api_url)
    try:
        with pytest.raises(AuthUnavailable, match="refused the secret key") as caught:
            await auth.authenticate(idp_b.mint("user-1"))
    finally:
        await auth.aclose()
    assert "IDP_B_SECRET_KEY" in str(caught.value)
    assert "sk_not_the_secret" not in str(caught.value)
    assert idp_b.secret_key not in str(caught.value)
