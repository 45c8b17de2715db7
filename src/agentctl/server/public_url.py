"""Where clients reach the server: the configured public URL (`AGENTCTL_PUBLIC_URL`), or
else the URL the request came to — which names whatever `Host` the client sent.

A response carrying a URL taken from the request must not be kept by a cache for other
clients: one request with a forged `Host` would have everyone else sent to that host
(cache poisoning). Such a response says so (`Located.cache_control`); with the public URL
configured it can be cached as usual.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from starlette.requests import Request

PLATFORM_ROOT = "agentctl.platform_root"  # the scope key: the platform's own root path
# A response that names the request's `Host`: kept by no cache, and said to vary with it.
NOT_CACHED = {"Cache-Control": "no-store", "Vary": "Host"}
DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Located:
    """A URL of the server, and whether it came from the request (`Host`) rather than from
    the configured public URL."""

    url: str
    from_request: bool

    def cache_headers(self, cacheable: dict[str, str] | None = None) -> dict[str, str]:
        """The caching headers of a response naming this URL: `cacheable` (none: the
        default caching) unless the URL came from the request, which no cache may keep."""
        return dict(NOT_CACHED) if self.from_request else dict(cacheable or {})


def parse_public_url(text: str) -> str:
    """`AGENTCTL_PUBLIC_URL` checked (`http(s)://host[:port][/path]`), without its trailing
    slash; raises ValueError naming what is wrong."""
    url = text.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(
            f"{text!r} is not a URL clients can reach — write it as https://host[:port][/path], "
            "e.g. https://agents.example.com"
        )
    try:
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
    except ValueError:
        raise ValueError(f"{text!r} has a port that is not a number") from None
    return url


def origin_of(url: str) -> str:
    """The origin a browser sends for pages under `url` (`scheme://host[:port]`, lower case,
    without the scheme's default port)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is None or port == DEFAULT_PORTS.get(scheme):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def platform_url(request: Request, public_url: str | None) -> Located:
    """The platform's root URL: `public_url` when set, else as the caller reached it."""
    if public_url:
        return Located(public_url.rstrip("/"), from_request=False)
    root = request.scope.get(PLATFORM_ROOT, request.scope.get("root_path", ""))
    return Located(f"{request.url.scheme}://{request.url.netloc}{root}", from_request=True)


def agent_url(request: Request, name: str, public_url: str | None) -> Located:
    """The base URL of agent `name` (what the SDKs take), under `platform_url`."""
    base = platform_url(request, public_url)
    return Located(f"{base.url}/agents/{quote(name, safe='')}", base.from_request)


def own_url(request: Request, public_url: str | None) -> Located:
    """The base URL of the application answering `request`: on a platform, the agent's
    URL it was reached at (`/agents/<name>`, or the root for its only agent)."""
    if not public_url:
        return Located(str(request.base_url).rstrip("/"), from_request=True)
    platform_root = request.scope.get(PLATFORM_ROOT)
    root_path: str = request.scope.get("root_path", "")
    suffix = "" if platform_root is None else root_path[len(platform_root) :]
    return Located(public_url.rstrip("/") + quote(suffix), from_request=False)
