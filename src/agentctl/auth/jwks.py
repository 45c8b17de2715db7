"""A provider's JSON Web Key Set, fetched once and kept for `ttl` seconds.

A token naming a key id (`kid`) the cached set lacks makes the set refresh once — a provider
that rotated its keys is followed at once — but such refreshes happen at most once per
`min_refresh_interval` seconds, so tokens with made-up key ids cannot turn the server into a
load generator against the provider. Concurrent fetches are shared. A set that cannot be
fetched or read is `AuthUnavailable`; a key it does not hold is `AuthError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
from jwt import PyJWK
from jwt.exceptions import PyJWTError

from agentctl.auth.base import host_of, unavailable
from agentctl.auth.cache import SharedFetch
from agentctl.errors import AuthError, AuthUnavailable

__all__ = ["DEFAULT_MIN_REFRESH_INTERVAL", "DEFAULT_TTL", "JwksCache"]

DEFAULT_TTL = 300.0  # seconds a fetched key set is used before it is fetched again
DEFAULT_MIN_REFRESH_INTERVAL = 10.0  # seconds between refreshes caused by unknown key ids

# Key types that verify asymmetric signatures, and the algorithms each can verify.
_ALGORITHMS_OF_KTY = {
    "RSA": frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}),
    "EC": frozenset({"ES256", "ES384", "ES512"}),
    "OKP": frozenset({"EdDSA"}),
}
_EC_CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
_NEVER = float("-inf")
Keys = dict[str | None, Mapping[str, Any]]  # key id -> JWK, as the provider sent it


class JwksCache:
    """The signing keys at `url` (fetched with `headers`), by key id."""

    def __init__(
        self,
        url: str,
        client: httpx.AsyncClient,
        *,
        headers: Mapping[str, str] | None = None,
        ttl: float = DEFAULT_TTL,
        min_refresh_interval: float = DEFAULT_MIN_REFRESH_INTERVAL,
        credential: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`credential` names the environment variable `headers` carry, for the message
        when the provider refuses it (the value itself is never shown)."""
        self.url = url
        self.ttl = ttl
        self.min_refresh_interval = min_refresh_interval
        self.fetches = 0  # attempts to download the set, successful or not
        self._client = client
        self._headers = dict(headers or {})
        self._credential = credential
        self._clock = clock
        self._keys: SharedFetch[Keys] = SharedFetch(clock=clock)
        self._bound: dict[tuple[str | None, str], PyJWK] = {}
        self._refreshed_at = _NEVER  # the last refresh caused by an unknown key id

    async def key(self, kid: str | None, alg: str) -> PyJWK:
        """The key that verifies a token with header `kid` and `alg`."""
        keys = await self._keys.current(self.ttl, self._download)
        jwk = _find(keys, kid)
        if jwk is None and self._clock() - self._refreshed_at >= self.min_refresh_interval:
            self._refreshed_at = self._clock()
            keys = await self._keys.fetch(self._keys.ended, self._download)
            jwk = _find(keys, kid)
        if jwk is None:
            if self._keys.failure is not None:  # the last refresh failed: the key may well exist
                raise AuthUnavailable(self._keys.failure)
            if kid is None:
                raise AuthError("the token does not name its signing key (no kid) — sign in again")
            raise AuthError("the token is signed with an unknown signing key — sign in again")
        return self._bind(kid, alg, jwk)

    def _bind(self, kid: str | None, alg: str, jwk: Mapping[str, Any]) -> PyJWK:
        """`jwk` as a key for `alg` (PyJWT ties every key to one algorithm)."""
        bound = self._bound.get((kid, alg))
        if bound is not None:
            return bound
        declared = jwk.get("alg")
        usable = alg in _ALGORITHMS_OF_KTY.get(str(jwk.get("kty")), ())
        if declared is not None and declared != alg:
            usable = False
        if alg in _EC_CURVES and jwk.get("crv") != _EC_CURVES[alg]:
            usable = False
        if not usable:
            raise AuthError("the token's algorithm does not match its signing key — sign in again")
        try:
            bound = PyJWK(dict(jwk), alg)
        except PyJWTError:
            raise AuthError("the token's signing key cannot verify it — sign in again") from None
        self._bound[(kid, alg)] = bound
        return bound

    async def _download(self) -> Keys:
        """Download the set; keys bound from the previous one are dropped."""
        self.fetches += 1
        keys = await self._read_set()
        self._bound = {}
        return keys

    async def _read_set(self) -> Keys:
        host = host_of(self.url)
        try:
            response = await self._client.get(self.url, headers=self._headers)
        except httpx.HTTPError as exc:
            raise unavailable(self.url, exc) from exc
        status = response.status_code
        if status in (401, 403) and self._credential:
            raise AuthUnavailable(
                f"the identity provider at {host} refused the secret key — check "
                f"{self._credential} on the server"
            )
        if status != 200:
            again = "try again" if status == 429 or status >= 500 else "check the server's auth"
            raise AuthUnavailable(
                f"the identity provider at {host} answered HTTP {status} for its signing keys "
                f"— {again}"
            )
        try:
            document: Any = response.json()
        except ValueError:
            document = None
        entries = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise AuthUnavailable(
                f"the identity provider at {host} sent signing keys agentctl cannot read "
                "(not a JSON Web Key Set) — check the server's auth configuration"
            )
        keys = _usable(entries)
        if not keys:
            raise AuthUnavailable(
                f"the identity provider at {host} sent no usable signing keys — check the "
                "server's auth configuration"
            )
        return keys


def _usable(entries: list[Any]) -> Keys:
    """The asymmetric signature keys among `entries`, by key id (first one wins)."""
    keys: Keys = {}
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("kty") not in _ALGORITHMS_OF_KTY:
            continue
        if entry.get("use", "sig") != "sig":
            continue
        kid = entry.get("kid")
        if kid is not None and not isinstance(kid, str):
            continue
        try:
            PyJWK(entry)  # parses the key material; an unreadable key is skipped
        except PyJWTError:
            continue
        keys.setdefault(kid, entry)
    return keys


def _find(
    keys: Mapping[str | None, Mapping[str, Any]], kid: str | None
) -> Mapping[str, Any] | None:
    if kid is not None:
        return keys.get(kid)
    only = list(keys.values())
    return only[0] if len(only) == 1 else None
