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

from typing import TYPE_CHECKING

from agentctl.auth.base import Identity, require_http_url
from agentctl.auth.tokens import KeySetVerifier, VerifierOptions, subject, verify

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ALGORITHMS", "DEFAULT_API_URL", "SECRET_KEY_ENV", "IdpBAuthenticator"]

DEFAULT_API_URL = "https://api.clerk.com/v1"
ALGORITHMS = ("RS256",)
SECRET_KEY_ENV = "IDP_B_SECRET_KEY"


class IdpBAuthenticator(KeySetVerifier):
    """Validates idp_b session tokens (RS256 JWTs) against the provider's cached key set."""

    provider = "idp_b"

    def __init__(
        self, secret_key: str, *, api_url: str = DEFAULT_API_URL, **options: Unpack[VerifierOptions]
    ) -> None:
        require_http_url(api_url, "the idp_b API URL")
        super().__init__(**options)
        self.keys = self._key_set(
            api_url.rstrip("/") + "/jwks",
            headers={"authorization": f"Bearer {secret_key}"},
            credential=SECRET_KEY_ENV,
        )

    async def authenticate(self, token: str) -> Identity:
        claims = await verify(
            token, self.keys, algorithms=ALGORITHMS, require=("exp", "sub"), leeway=self.leeway
        )
        return Identity(id=subject(claims), provider=self.provider)
