"""`authenticator_for`: [auth] plus the environment in, a working authenticator out."""

from __future__ import annotations

import pytest

from agentctl.auth import (
    IDP_B_DEFAULT_API_URL,
    Authenticator,
    AuthError,
    AuthUnavailable,
    Identity,
    IdpAAuthenticator,
    IdpBAuthenticator,
    OidcAuthenticator,
    authenticator_for,
)
from agentctl.errors import MissingEnvError, RuntimeFailure, UserError
from agentctl.project.model import AuthConfig, AuthProvider
from agentctl.testing.identity import IdpAServer, IdpBServer, OidcIssuer


@pytest.mark.parametrize(
    ("provider", "env", "missing"),
    [
        ("idp_a", {}, ["IDP_A_PUBLISHABLE_DEFAULT_KEY", "IDP_A_URL"]),
        ("idp_a", {"IDP_A_URL": "http://127.0.0.1:9"}, ["IDP_A_PUBLISHABLE_DEFAULT_KEY"]),
        ("idp_a", {"IDP_A_URL": " ", "IDP_A_PUBLISHABLE_DEFAULT_KEY": "pk"}, ["IDP_A_URL"]),
        ("idp_b", {"IDP_B_API_URL": "http://127.0.0.1:9"}, ["IDP_B_SECRET_KEY"]),
    ],
)
def test_missing_variables_are_named(
    provider: AuthProvider, env: dict[str, str], missing: list[str]
) -> None:
    with pytest.raises(MissingEnvError) as caught:
        authenticator_for(AuthConfig(provider), env)
    assert caught.value.names == missing
    for name in missing:
        assert f"{name} (for auth {provider})" in str(caught.value)


async def test_idp_a_from_the_environment_validates_sessions(idp_a: IdpAServer) -> None:
    auth = authenticator_for(AuthConfig("idp_a"), idp_a.env, cache_ttl=0)
    try:
        assert isinstance(auth, IdpAAuthenticator)
        token = idp_a.issue("user-9")
        assert await auth.authenticate(token) == Identity("user-9", "idp_a")
        await auth.authenticate(token)
        assert idp_a.calls == 2  # cache_ttl=0: nothing kept
    finally:
        await auth.aclose()


async def test_idp_b_from_the_environment_validates_tokens(idp_b: IdpBServer) -> None:
    auth = authenticator_for(AuthConfig("idp_b"), idp_b.env, cache_ttl=42)
    try:
        assert isinstance(auth, IdpBAuthenticator)
        assert auth.keys.ttl == 42
        assert await auth.authenticate(idp_b.mint("user-9")) == Identity("user-9", "idp_b")
    finally:
        await auth.aclose()


async def test_idp_b_defaults_to_the_providers_public_api() -> None:
    auth = authenticator_for(AuthConfig("idp_b"), {"IDP_B_SECRET_KEY": "sk_test"})
    try:
        assert isinstance(auth, IdpBAuthenticator)
        assert IDP_B_DEFAULT_API_URL == "https://api.clerk.com/v1"
        assert auth.keys.url == "https://api.clerk.com/v1/jwks"
    finally:
        await auth.aclose()


async def test_oidc_needs_no_environment(oidc: OidcIssuer) -> None:
    config = AuthConfig("oidc", issuer=oidc.issuer, audience=oidc.audience)
    auth = authenticator_for(config, {})
    try:
        assert isinstance(auth, OidcAuthenticator)
        assert await auth.authenticate(oidc.mint("user-9")) == Identity("user-9", "oidc")
    finally:
        await auth.aclose()


@pytest.mark.parametrize(
    ("provider", "env", "name"),
    [
        (
            "idp_a",
            {"IDP_A_URL": "idp.example.com", "IDP_A_PUBLISHABLE_DEFAULT_KEY": "pk"},
            "IDP_A_URL",
        ),
        ("idp_b", {"IDP_B_SECRET_KEY": "sk", "IDP_B_API_URL": "ftp://x"}, "IDP_B_API_URL"),
    ],
)
def test_a_url_that_is_not_http_is_a_user_error(
    provider: AuthProvider, env: dict[str, str], name: str
) -> None:
    with pytest.raises(UserError, match=f"{name} must be an http:// or https:// URL"):
        authenticator_for(AuthConfig(provider), env)


def test_every_authenticator_is_an_authenticator() -> None:
    for cls in (IdpAAuthenticator, IdpBAuthenticator, OidcAuthenticator):
        assert isinstance(cls.__new__(cls), Authenticator)


def test_errors_carry_their_http_status() -> None:
    assert (AuthError.status, AuthUnavailable.status) == (401, 503)
    assert issubclass(AuthUnavailable, RuntimeFailure)
    assert not issubclass(AuthError, UserError | RuntimeFailure)
