"""Verifying a signed JWT against a provider's key set, for idp_b and oidc (`KeySetVerifier`
is what both authenticators share).

The algorithm is checked against an allow-list of asymmetric algorithms *before* any key is
looked up, and the key found is bound to that one algorithm, so neither ``alg: none`` nor an
HMAC token "signed" with the public key can pass. Every way a token can be wrong becomes an
`AuthError` whose message says what is wrong without repeating the token.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, TypedDict

import httpx
import jwt
from jwt import exceptions as jwt_errors

from agentctl.auth.base import check_token, new_client
from agentctl.auth.jwks import DEFAULT_MIN_REFRESH_INTERVAL, DEFAULT_TTL, JwksCache
from agentctl.errors import AuthError

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "DEFAULT_LEEWAY",
    "KeySetVerifier",
    "VerifierOptions",
    "read_header",
    "subject",
    "verify",
]

ASYMMETRIC_ALGORITHMS: tuple[str, ...] = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
DEFAULT_LEEWAY = 5.0  # seconds of clock skew tolerated on exp, nbf and iat

_AGAIN = " — sign in again"
_MALFORMED = (
    "the token is malformed (not a signed JWT) — send the session token as "
    "Authorization: Bearer <token>"
)


def read_header(token: str) -> tuple[str, str | None]:
    """The `alg` and `kid` of a compact JWS, without verifying anything."""
    if token.count(".") != 2:
        raise AuthError(_MALFORMED)
    try:
        header = jwt.get_unverified_header(token)
    except (jwt_errors.PyJWTError, ValueError):
        raise AuthError(_MALFORMED) from None
    alg, kid = header.get("alg"), header.get("kid")
    if not isinstance(alg, str) or (kid is not None and not isinstance(kid, str)):
        raise AuthError(_MALFORMED)
    return alg, kid


async def verify(
    token: str,
    keys: JwksCache,
    *,
    algorithms: Collection[str],
    require: Sequence[str] = ("exp", "sub"),
    issuer: str | None = None,
    audience: str | None = None,
    leeway: float = DEFAULT_LEEWAY,
) -> dict[str, Any]:
    """The claims of `token` once its signature, algorithm, times and `require`d claims
    (and `issuer`/`audience` when given) are checked; `AuthError` otherwise."""
    token = check_token(token)
    alg, kid = read_header(token)
    if alg not in algorithms or alg not in ASYMMETRIC_ALGORITHMS:
        accepted = ", ".join(a for a in ASYMMETRIC_ALGORITHMS if a in algorithms)
        raise AuthError(f"the token's signing algorithm is not accepted (only {accepted}){_AGAIN}")
    key = await keys.key(kid, alg)
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=[alg],
            issuer=issuer,
            audience=audience,
            leeway=leeway,
            options={"require": list(require), "verify_aud": audience is not None},
        )
    except (jwt_errors.PyJWTError, ValueError) as exc:
        raise AuthError(_explain(exc)) from None
    return claims


class VerifierOptions(TypedDict, total=False):
    """The settings of a `KeySetVerifier`, as its subclasses take them."""

    jwks_ttl: float
    min_refresh_interval: float
    leeway: float
    client: httpx.AsyncClient | None


class KeySetVerifier:
    """What the authenticators of signed tokens share: how long key sets are kept and
    refreshed (see `JwksCache`), the clock skew tolerated (`leeway`), and an HTTP client,
    borrowed (not closed) when given."""

    def __init__(
        self,
        *,
        jwks_ttl: float = DEFAULT_TTL,
        min_refresh_interval: float = DEFAULT_MIN_REFRESH_INTERVAL,
        leeway: float = DEFAULT_LEEWAY,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.jwks_ttl = jwks_ttl
        self.min_refresh_interval = min_refresh_interval
        self.leeway = leeway
        self._owns_client = client is None
        self._client = client or new_client()

    def _key_set(
        self, url: str, *, headers: Mapping[str, str] | None = None, credential: str | None = None
    ) -> JwksCache:
        """The cache of the key set at `url` (see `JwksCache` for `headers`, `credential`)."""
        return JwksCache(
            url,
            self._client,
            headers=headers,
            ttl=self.jwks_ttl,
            min_refresh_interval=self.min_refresh_interval,
            credential=credential,
        )

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()


def subject(claims: dict[str, Any]) -> str:
    """The token's `sub`: the user's id at the provider."""
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub:
        raise AuthError(f"the token names no user (empty sub claim){_AGAIN}")
    return sub


# What is wrong with a token PyJWT refused, by the error it raised; the first match wins
# (InvalidSignatureError is a DecodeError).
_EXPLANATIONS: tuple[tuple[type[Exception], str], ...] = (
    (jwt_errors.ExpiredSignatureError, f"the token has expired{_AGAIN}"),
    (
        jwt_errors.ImmatureSignatureError,
        "the token is not valid yet — check the clock of the client, then sign in again",
    ),
    (
        jwt_errors.InvalidSignatureError,
        f"the token's signature does not verify (forged or altered){_AGAIN}",
    ),
    (jwt_errors.InvalidIssuerError, f"the token was issued by another identity provider{_AGAIN}"),
    (
        jwt_errors.InvalidAudienceError,
        f"the token is meant for another application (aud){_AGAIN}",
    ),
    (
        jwt_errors.InvalidAlgorithmError,
        f"the token's algorithm does not match its signing key{_AGAIN}",
    ),
    (jwt_errors.InvalidIssuedAtError, f"the token's iat claim is not a number{_AGAIN}"),
    (jwt_errors.InvalidSubjectError, f"the token's sub claim is not a string{_AGAIN}"),
    (jwt_errors.DecodeError, _MALFORMED),
    (ValueError, _MALFORMED),
)


def _explain(exc: Exception) -> str:
    """What is wrong with a token PyJWT refused, in the user's terms."""
    if isinstance(exc, jwt_errors.MissingRequiredClaimError):
        return f"the token has no {exc.claim} claim{_AGAIN}"
    for kind, explanation in _EXPLANATIONS:
        if isinstance(exc, kind):
            return explanation
    return f"the token is not valid{_AGAIN}"
