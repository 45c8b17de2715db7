"""`[auth] provider = "idp_a"`: a hosted auth service that validates its own opaque sessions.

A bearer token is valid when ``GET {IDP_A_URL}/auth/v1/user`` with ``Authorization: Bearer
<token>`` and ``apikey: <IDP_A_PUBLISHABLE_DEFAULT_KEY>`` answers 200 with a JSON user object;
the identity is the user's ``id``. The provider is asked at most once per token per `cache_ttl`
seconds (a revoked session is refused once that time has passed), rejected tokens are
remembered for the shorter `negative_ttl`, and concurrent checks of one token share one call.
"""

from __future__ import annotations

from typing import Any

import httpx

from agentctl.auth.base import (
    Identity,
    check_token,
    host_of,
    new_client,
    require_http_url,
    token_digest,
    unavailable,
)
from agentctl.auth.cache import SingleFlight, TtlCache
from agentctl.errors import AuthError, AuthUnavailable

__all__ = ["DEFAULT_CACHE_TTL", "USER_PATH", "IdpAAuthenticator"]

USER_PATH = "/auth/v1/user"
DEFAULT_CACHE_TTL = 30.0  # seconds a validated session is trusted without asking again
# What the provider answers for a session it does not know, or a token it cannot parse.
_REJECTED = frozenset({400, 401, 403, 404, 422})
_INVALID = (
    "the session token was not accepted by the identity provider (expired, signed out or "
    "not issued by it) — sign in again"
)


class IdpAAuthenticator:
    """Validates idp_a session tokens by asking the provider, with a short cache."""

    provider = "idp_a"

    def __init__(
        self,
        url: str,
        publishable_key: str,
        *,
        cache_ttl: float = DEFAULT_CACHE_TTL,
        negative_ttl: float = 5.0,
        cache_size: int = 10_000,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        """`url` is IDP_A_URL (the project's base URL); `client` is borrowed, not closed."""
        require_http_url(url, "the idp_a URL")
        self.user_url = url.rstrip("/") + USER_PATH
        self.cache_ttl = cache_ttl
        self.negative_ttl = min(negative_ttl, cache_ttl)
        self._key = publishable_key
        self._owns_client = client is None
        self._client = client or new_client()
        # Token digest -> Identity, or the message of the AuthError it got.
        self._cache: TtlCache[bytes, Identity | str] = TtlCache(cache_size)
        self._flights: SingleFlight[bytes, Identity] = SingleFlight()

    async def authenticate(self, token: str) -> Identity:
        token = check_token(token)
        digest = token_digest(token)
        cached = self._cache.get(digest)
        if isinstance(cached, Identity):
            return cached
        if cached is not None:
            raise AuthError(cached)
        return await self._flights.do(digest, lambda: self._ask(token, digest))

    async def aclose(self) -> None:
        await self._flights.aclose()
        self._cache.clear()
        if self._owns_client:
            await self._client.aclose()

    async def _ask(self, token: str, digest: bytes) -> Identity:
        try:
            identity = await self._validate(token)
        except AuthError as exc:
            self._cache.put(digest, str(exc), self.negative_ttl)
            raise
        self._cache.put(digest, identity, self.cache_ttl)
        return identity

    async def _validate(self, token: str) -> Identity:
        headers = {"authorization": f"Bearer {token}", "apikey": self._key}
        try:
            response = await self._client.get(self.user_url, headers=headers)
        except httpx.HTTPError as exc:
            raise unavailable(self.user_url, exc) from exc
        status = response.status_code
        if status == 200:
            return Identity(id=self._user_id(response), provider=self.provider)
        if status == 401 and _refuses_api_key(response):
            raise AuthUnavailable(
                f"the identity provider at {host_of(self.user_url)} refused the publishable "
                "key — check IDP_A_PUBLISHABLE_DEFAULT_KEY (and IDP_A_URL) on the server"
            )
        if status in _REJECTED:
            raise AuthError(_INVALID)
        host = host_of(self.user_url)
        if status == 429 or status >= 500:
            raise AuthUnavailable(
                f"the identity provider at {host} failed (HTTP {status}) — try again"
            )
        raise AuthUnavailable(
            f"the identity provider at {host} answered HTTP {status} for {USER_PATH} — "
            "check that IDP_A_URL is the base URL of the auth service"
        )

    def _user_id(self, response: httpx.Response) -> str:
        try:
            user: Any = response.json()
        except ValueError:
            user = None
        user_id = user.get("id") if isinstance(user, dict) else None
        if isinstance(user_id, str) and user_id:
            return user_id
        raise AuthUnavailable(
            f"the identity provider at {host_of(self.user_url)} answered without a user id — "
            "check that IDP_A_URL is the base URL of the auth service"
        )


def _refuses_api_key(response: httpx.Response) -> bool:
    """Whether a 401 is about the server's publishable key rather than the user's token
    (the gateway answers ``{"message": "Invalid API key"}`` / ``"No API key found..."``)."""
    try:
        body: Any = response.json()
    except ValueError:
        return False
    message = body.get("message") if isinstance(body, dict) else None
    return isinstance(message, str) and "api key" in message.lower()
