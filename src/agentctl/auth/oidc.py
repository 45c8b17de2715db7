"""`[auth] provider = "oidc"`: any OpenID Connect provider (beyond the spec).

``[auth] issuer`` and ``audience`` configure it. The provider's discovery document at
``{issuer}/.well-known/openid-configuration`` is fetched once and kept for `discovery_ttl`
seconds; it must name the same issuer, and its ``jwks_uri`` is the key set tokens are verified
against (see `JwksCache`). Accepted algorithms are the asymmetric ones, narrowed to the
document's ``id_token_signing_alg_values_supported`` when it lists them. A token must carry
``exp``, ``iss`` equal to the issuer, ``aud`` containing the audience, and ``sub``: the identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from agentctl.auth.base import Identity, check_token, host_of, require_http_url, unavailable
from agentctl.auth.cache import SharedFetch
from agentctl.auth.jwks import JwksCache
from agentctl.auth.tokens import (
    ASYMMETRIC_ALGORITHMS,
    KeySetVerifier,
    VerifierOptions,
    read_header,
    subject,
    verify,
)
from agentctl.errors import AuthUnavailable

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["DISCOVERY_PATH", "OidcAuthenticator"]

DISCOVERY_PATH = "/.well-known/openid-configuration"
HTTP_SCHEMES = ("http://", "https://")
_FIX = "check [auth].issuer in agent.toml"


@dataclass(frozen=True)
class _Discovered:
    jwks_uri: str
    algorithms: tuple[str, ...]
    token_endpoint: str | None  # where a browser app exchanges its code (the web console)


class OidcAuthenticator(KeySetVerifier):
    """Validates JWT access or ID tokens of an OpenID Connect provider."""

    provider = "oidc"

    def __init__(
        self,
        issuer: str,
        audience: str,
        *,
        discovery_ttl: float = 3600.0,
        **options: Unpack[VerifierOptions],
    ) -> None:
        require_http_url(issuer, "the OIDC issuer")
        super().__init__(**options)
        self.issuer = issuer
        self.audience = audience
        self.discovery_url = issuer.rstrip("/") + DISCOVERY_PATH
        self.discovery_ttl = discovery_ttl
        self.keys: JwksCache | None = None  # once discovered
        self._discovered: SharedFetch[_Discovered] = SharedFetch()

    async def authenticate(self, token: str) -> Identity:
        read_header(check_token(token))  # a malformed token is refused before any fetch
        discovered = await self._discovered.current(self.discovery_ttl, self._discover)
        assert self.keys is not None
        claims = await verify(
            token,
            self.keys,
            algorithms=discovered.algorithms,
            require=("exp", "iss", "aud", "sub"),
            issuer=self.issuer,
            audience=self.audience,
            leeway=self.leeway,
        )
        return Identity(id=subject(claims), provider=self.provider)

    async def token_endpoint(self) -> str | None:
        """The provider's token endpoint (an http(s) URL), if its discovery document names
        one; `AuthUnavailable` when the document cannot be had."""
        return (await self._discovered.current(self.discovery_ttl, self._discover)).token_endpoint

    async def _discover(self) -> _Discovered:
        """Fetch the discovery document; a new `jwks_uri` gets a new key cache."""
        found = await self._fetch()
        if self.keys is None or self.keys.url != found.jwks_uri:
            self.keys = self._key_set(found.jwks_uri)
        return found

    async def _fetch(self) -> _Discovered:
        url = self.discovery_url
        host = host_of(url)
        try:
            response = await self._client.get(url)
        except httpx.HTTPError as exc:
            raise unavailable(url, exc) from exc
        status = response.status_code
        if status != 200:
            fix = "try again" if status == 429 or status >= 500 else _FIX
            raise AuthUnavailable(
                f"the identity provider at {host} answered HTTP {status} for {DISCOVERY_PATH} "
                f"— {fix}"
            )
        try:
            document: Any = response.json()
        except ValueError:
            document = None
        if not isinstance(document, dict):
            raise AuthUnavailable(
                f"the identity provider at {host} sent a discovery document that is not a "
                f"JSON object — {_FIX}"
            )
        named = document.get("issuer")
        if named != self.issuer:
            shown = f'"{named[:200]}"' if isinstance(named, str) else "no issuer"
            raise AuthUnavailable(
                f"the discovery document at {host} names {shown}, not the configured issuer "
                "— set [auth].issuer in agent.toml to exactly the provider's issuer"
            )
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.startswith(HTTP_SCHEMES):
            raise AuthUnavailable(
                f"the discovery document at {host} has no jwks_uri — the provider must publish "
                "its signing keys"
            )
        token_endpoint = document.get("token_endpoint")
        if not isinstance(token_endpoint, str) or not token_endpoint.startswith(HTTP_SCHEMES):
            token_endpoint = None
        return _Discovered(jwks_uri, _algorithms(host, document), token_endpoint)


def _algorithms(host: str, document: dict[str, Any]) -> tuple[str, ...]:
    supported = document.get("id_token_signing_alg_values_supported")
    if not isinstance(supported, list):
        return ASYMMETRIC_ALGORITHMS
    algorithms = tuple(a for a in ASYMMETRIC_ALGORITHMS if a in supported)
    if not algorithms:
        raise AuthUnavailable(
            f"the identity provider at {host} signs tokens with none of "
            f"{', '.join(ASYMMETRIC_ALGORITHMS)} — configure it to use an asymmetric algorithm"
        )
    return algorithms
