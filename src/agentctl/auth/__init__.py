"""End-user authentication: bearer tokens in, identities out (see `Authenticator`).

`authenticator_for(project.auth, project.env)` builds the adapter `[auth]` chooses:

- `idp_a` asks the provider (``GET {IDP_A_URL}/auth/v1/user``) and caches the answer briefly;
  needs ``IDP_A_URL`` and ``IDP_A_PUBLISHABLE_DEFAULT_KEY``.
- `idp_b` verifies an RS256 signature against the provider's cached key set; needs
  ``IDP_B_SECRET_KEY`` (``IDP_B_API_URL`` is optional).
- `oidc` verifies a signature against the key set named by the ``[auth].issuer``'s discovery
  document, and the ``[auth].audience``; needs no environment variable.

`agentctl.testing.identity` has real loopback providers of each kind, for tests and offline use.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentctl.auth.base import Authenticator, Identity
from agentctl.auth.idp_a import DEFAULT_CACHE_TTL, IdpAAuthenticator
from agentctl.auth.idp_b import DEFAULT_API_URL as IDP_B_DEFAULT_API_URL
from agentctl.auth.idp_b import IdpBAuthenticator
from agentctl.auth.jwks import DEFAULT_TTL, JwksCache
from agentctl.auth.oidc import OidcAuthenticator
from agentctl.bundle.dependencies import AUTH_PROVIDERS
from agentctl.errors import AuthError, AuthUnavailable, MissingEnvError, UserError
from agentctl.project.model import AuthConfig

__all__ = [
    "IDP_B_DEFAULT_API_URL",
    "AuthError",
    "AuthUnavailable",
    "Authenticator",
    "Identity",
    "IdpAAuthenticator",
    "IdpBAuthenticator",
    "JwksCache",
    "OidcAuthenticator",
    "authenticator_for",
    "same_users",
]


def same_users(
    one: AuthConfig | None, one_env: Mapping[str, str], other: AuthConfig | None,
    other_env: Mapping[str, str],
) -> bool:  # fmt: skip
    """Whether two `[auth]`s admit the same tokens: the same provider, issuer and audience,
    and the same provider settings (`IDP_A_URL`, `IDP_B_SECRET_KEY`, …) in their variables.
    False when either has no `[auth]`."""
    if one is None or other is None:
        return False
    if (one.provider, one.issuer, one.audience) != (other.provider, other.issuer, other.audience):
        return False
    needs = AUTH_PROVIDERS[one.provider]
    return all(
        one_env.get(name, "").strip() == other_env.get(name, "").strip()
        for name in (*needs.env, *needs.optional)
    )


def authenticator_for(
    config: AuthConfig, env: Mapping[str, str], *, cache_ttl: float | None = None
) -> Authenticator:
    """The authenticator `[auth]` asks for, configured from `env` (e.g. `Project.env`).

    `cache_ttl` (seconds; None: the provider's default) is how long a validated idp_a session
    is trusted before the provider is asked again, or how long idp_b's and oidc's key sets are
    kept. Raises `MissingEnvError` naming every variable the provider needs that is unset.
    """
    names = AUTH_PROVIDERS[config.provider].env
    missing = {name: f"auth {config.provider}" for name in names if not env.get(name, "").strip()}
    if missing:
        raise MissingEnvError(missing)
    if config.provider == "idp_a":
        url = env["IDP_A_URL"].strip()
        _check_url("IDP_A_URL", url)
        key = env["IDP_A_PUBLISHABLE_DEFAULT_KEY"].strip()
        return IdpAAuthenticator(url, key, cache_ttl=_or(cache_ttl, DEFAULT_CACHE_TTL))
    jwks_ttl = _or(cache_ttl, DEFAULT_TTL)
    if config.provider == "idp_b":
        api_url = env.get("IDP_B_API_URL", "").strip() or IDP_B_DEFAULT_API_URL
        _check_url("IDP_B_API_URL", api_url)
        return IdpBAuthenticator(
            env["IDP_B_SECRET_KEY"].strip(), api_url=api_url, jwks_ttl=jwks_ttl
        )
    if config.issuer is None or config.audience is None:
        raise UserError(
            '[auth] provider = "oidc" needs issuer and audience — set both in agent.toml'
        )
    return OidcAuthenticator(config.issuer, config.audience, jwks_ttl=jwks_ttl)


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _check_url(name: str, url: str) -> None:
    if not url.startswith(("http://", "https://")):
        raise UserError(f"{name} must be an http:// or https:// URL — fix it in the .env")
