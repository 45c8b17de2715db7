"""oidc: discovery, issuer and audience, against a real loopback OpenID Connect provider."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentctl.auth import AuthError, AuthUnavailable, Identity, OidcAuthenticator
from agentctl.testing.identity import OidcIssuer


@pytest.fixture
async def auth(oidc: OidcIssuer) -> AsyncIterator[OidcAuthenticator]:
    authenticator = OidcAuthenticator(oidc.issuer, oidc.audience)
    yield authenticator
    await authenticator.aclose()


async def test_the_discovery_document_is_fetched_once(
    oidc: OidcIssuer, auth: OidcAuthenticator
) -> None:
    assert oidc.issuer.endswith("/realms/demo")
    for user in ("user-1", "user-2"):
        assert await auth.authenticate(oidc.mint(user)) == Identity(user, "oidc")
    assert (oidc.discovery_fetches, oidc.jwks_fetches) == (1, 1)
    assert auth.keys is not None
    assert auth.keys.url == f"{oidc.issuer}/jwks"


async def test_an_audience_list_that_contains_ours_is_accepted(
    oidc: OidcIssuer, auth: OidcAuthenticator
) -> None:
    token = oidc.mint("user-1", audience=["another-app", oidc.audience])
    assert (await auth.authenticate(token)).id == "user-1"


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        ({"iss": "https://evil.example.com"}, "issued by another identity provider"),
        ({"iss": None}, "has no iss claim"),
        ({"aud": "another-app"}, r"meant for another application \(aud\)"),
        ({"aud": ["another-app", "third-app"]}, r"meant for another application \(aud\)"),
        ({"aud": None}, "has no aud claim"),
    ],
)
async def test_a_token_of_another_issuer_or_audience_is_refused(
    oidc: OidcIssuer, auth: OidcAuthenticator, claims: dict[str, object], message: str
) -> None:
    with pytest.raises(AuthError, match=message):
        await auth.authenticate(oidc.mint("user-1", extra_claims=claims))


async def test_a_malformed_token_is_refused_before_any_fetch(
    oidc: OidcIssuer, auth: OidcAuthenticator
) -> None:
    with pytest.raises(AuthError, match="malformed"):
        await auth.authenticate("not.a.jwt")
    assert oidc.discovery_fetches == 0


async def test_algorithms_are_narrowed_to_what_discovery_lists(
    oidc: OidcIssuer, auth: OidcAuthenticator
) -> None:
    oidc.signing_algs = ["ES256", "HS256"]
    with pytest.raises(AuthError, match=r"not accepted \(only ES256\)"):
        await auth.authenticate(oidc.mint("user-1"))  # RS256, really signed
    with pytest.raises(AuthError, match="not accepted"):
        await auth.authenticate(oidc.mint("user-1", alg="HS256", key=b"secret"))


async def test_without_a_listed_algorithm_every_asymmetric_one_is_accepted(
    oidc: OidcIssuer, auth: OidcAuthenticator
) -> None:
    oidc.signing_algs = []
    assert "id_token_signing_alg_values_supported" not in oidc.discovery()
    for alg in ("PS256", "RS512"):
        assert (await auth.authenticate(oidc.mint("u", alg=alg))).id == "u"


async def test_a_key_that_declares_its_algorithm_verifies_only_that_one(
    oidc: OidcIssuer, auth: OidcAuthenticator
) -> None:
    oidc.signing_algs, oidc.key_alg = [], "RS256"
    assert (await auth.authenticate(oidc.mint("u"))).id == "u"
    with pytest.raises(AuthError, match="does not match its signing key"):
        await auth.authenticate(oidc.mint("u", alg="PS256"))


async def test_a_provider_with_only_symmetric_algorithms_is_unavailable(
    oidc: OidcIssuer, auth: OidcAuthenticator
) -> None:
    oidc.signing_algs = ["HS256"]
    with pytest.raises(AuthUnavailable, match="asymmetric algorithm"):
        await auth.authenticate(oidc.mint("user-1"))


async def test_a_discovery_document_of_another_issuer_is_unavailable(oidc: OidcIssuer) -> None:
    auth = OidcAuthenticator(oidc.issuer + "/", oidc.audience)  # one character off
    try:
        with pytest.raises(AuthUnavailable, match=r"set \[auth\]\.issuer") as caught:
            await auth.authenticate(oidc.mint("user-1"))
    finally:
        await auth.aclose()
    assert f'names "{oidc.issuer}"' in str(caught.value)


async def test_a_discovery_outage_is_unavailable_and_not_remembered(
    oidc: OidcIssuer, auth: OidcAuthenticator
) -> None:
    oidc.outage = True
    with pytest.raises(AuthUnavailable, match="HTTP 503") as caught:
        await auth.authenticate(oidc.mint("user-1"))
    assert caught.value.status == 503
    assert oidc.discovery_fetches == 1
    oidc.outage = False
    assert (await auth.authenticate(oidc.mint("user-1"))).id == "user-1"


async def test_no_discovery_document_at_the_issuer_is_unavailable(oidc: OidcIssuer) -> None:
    auth = OidcAuthenticator(oidc.url + "/realms/other", oidc.audience)
    try:
        with pytest.raises(AuthUnavailable, match=r"HTTP 404 .* check \[auth\]\.issuer"):
            await auth.authenticate(oidc.mint("user-1"))
    finally:
        await auth.aclose()
