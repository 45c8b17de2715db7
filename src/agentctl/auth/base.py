"""What every identity provider adapter is: a token goes in, an `Identity` or an error comes out.

An authenticator answers exactly one of three ways:

- an `Identity`: the token is valid; `id` is the provider's user id;
- `AuthError` (401): the token is missing, malformed, expired, revoked or forged;
- `AuthUnavailable` (503): the provider could not be asked (down, slow, answering nonsense,
  or refusing the server's own credentials). Never treated as "allowed".

Nothing here stores or prints a raw token: caches key on its SHA-256, messages never echo it.
"""

from __future__ import annotations

import functools
import hashlib
import ssl
from dataclasses import dataclass
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit

import httpx

from agentctl.errors import AuthError, AuthUnavailable

__all__ = [
    "MAX_TOKEN_LENGTH",
    "TIMEOUT",
    "Authenticator",
    "Identity",
    "check_token",
    "host_of",
    "new_client",
    "require_http_url",
    "token_digest",
    "unavailable",
]

# Longer than any real session token or JWT; refused before anything else looks at it.
MAX_TOKEN_LENGTH = 16 * 1024
# Short: a request waits on the provider, and a slow provider should fail fast as 503.
TIMEOUT = httpx.Timeout(5.0, connect=3.0)


@dataclass(frozen=True)
class Identity:
    """An authenticated user: the provider's user id and which provider vouched for it."""

    id: str
    provider: str


@runtime_checkable
class Authenticator(Protocol):
    """Validates end-user bearer tokens against one identity provider."""

    async def authenticate(self, token: str) -> Identity:
        """The identity the token proves; `AuthError` or `AuthUnavailable` otherwise."""
        ...

    async def aclose(self) -> None:
        """Release connections. The authenticator must not be used afterwards."""
        ...


def check_token(token: str) -> str:
    """`token` stripped of surrounding spaces, or `AuthError` when it cannot be a token."""
    token = token.strip()
    if not token:
        raise AuthError("no token — send Authorization: Bearer <token>")
    if len(token) > MAX_TOKEN_LENGTH:
        raise AuthError("the token is too long to be a session token — sign in again")
    if not token.isascii() or not token.isprintable() or " " in token:
        raise AuthError(
            "the token is malformed — send the session token as Authorization: Bearer <token>"
        )
    return token


def require_http_url(url: str, what: str) -> None:
    """`ValueError` unless `url` (`what` names it in the message) is an http(s) URL."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"{what} must start with http:// or https://")


def token_digest(token: str) -> bytes:
    """The cache key of a token: its SHA-256, so raw tokens are never kept in memory."""
    return hashlib.sha256(token.encode()).digest()


def host_of(url: str | httpx.URL) -> str:
    """`host[:port]` of a URL, without any user info: how messages name a provider."""
    parts = urlsplit(str(url))
    host = parts.hostname or str(url)
    return f"{host}:{parts.port}" if parts.port else host


def unavailable(url: str | httpx.URL, error: Exception | None = None) -> AuthUnavailable:
    """The `AuthUnavailable` for a provider that did not answer in time, or at all."""
    what = (
        "did not answer in time" if isinstance(error, httpx.TimeoutException) else "did not answer"
    )
    return AuthUnavailable(f"the identity provider at {host_of(url)} {what} — try again")


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every client: building one (loading CA certificates) is slow."""
    return httpx.create_ssl_context()


def new_client() -> httpx.AsyncClient:
    """The HTTP client an adapter uses: short timeouts, no redirects, a small pool."""
    return httpx.AsyncClient(
        verify=_tls(),
        timeout=TIMEOUT,
        follow_redirects=False,
        limits=httpx.Limits(max_connections=50, max_keepalive_connections=10),
        headers={"accept": "application/json"},
    )
