"""`[auth] provider = "idp_b"`: a session-token service whose tokens are RS256 JWTs.

Tokens are verified locally against the provider's key set, fetched from
``{IDP_B_API_URL}/jwks`` with ``Authorization: Bearer <IDP_B_SECRET_KEY>`` and cached (see
`JwksCache`): no call to the provider per request. ``IDP_B_API_URL`` defaults to the provider's
public API base, `DEFAULT_API_URL`; self-hosters of a compatible service, and tests (see
`agentctl.testing.identity.IdpBServer`), point it elsewhere.

Only RS256 is accepted; ``exp`` and ``sub`` are required, ``exp``/``nbf``/``iat`` are checked
with `leeway` seconds of clock skew, and the identity is ``sub``.
"""

from __future__ import annotations

import httpx

from agentctl.auth.base import Identity, new_client
from agentctl.auth.jwks import DEFAULT_MIN_REFRESH_INTERVAL, DEFAULT_TTL, JwksCache
from agentctl.auth.tokens import DEFAULT_LEEWAY, subject, verify

__all__ = ["ALGORITHMS", "DEFAULT_API_URL", "SECRET_KEY_ENV", "IdpBAuthenticator"]

DEFAULT_API_URL = "https://api.clerk.com/v1"
ALGORITHMS = ("RS256",)
SECRET_KEY_ENV = "IDP_B_SECRET_KEY"


class IdpBAuthenticator:
    """Validates idp_b session tokens (RS256 JWTs) against the provider's cached key set."""

    provider = "idp_b"

    def __init__(
        self,
        secret_key: str,
        *,
        api_url: str = DEFAULT_API_URL,
        jwks_ttl: float = DEFAULT_TTL,
        min_refresh_interval: float = DEFAULT_MIN_REFRESH_INTERVAL,
        leeway: float = DEFAULT_LEEWAY,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        """`client` is borrowed, not closed."""
        if not api_url.startswith(("http://", "https://")):
            raise ValueError("the idp_b API URL must start with http:// or https://")
        self.leeway = leeway
        self._owns_client = client is None
        self._client = client or new_client()
        self.keys = JwksCache(
            api_url.rstrip("/") + "/jwks",
            self._client,
            headers={"authorization": f"Bearer {secret_key}"},
            ttl=jwks_ttl,
            min_refresh_interval=min_refresh_interval,
            credential=SECRET_KEY_ENV,
        )

    async def authenticate(self, token: str) -> Identity:
        claims = await verify(
            token, self.keys, algorithms=ALGORITHMS, require=("exp", "sub"), leeway=self.leeway
        )
        return Identity(id=subject(claims), provider=self.provider)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()
