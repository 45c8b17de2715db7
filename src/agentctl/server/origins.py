"""Which web pages may call the server (CORS), and the guard against cross-site use.

A browser tells the server which page a request comes from (`Origin`) — on every
cross-site request, every WebSocket and every same-site POST — and lets the page read the
answer only when the server allows that origin. Without a guard, any page the developer
visits could still *send* requests to `agentctl dev` (a JSON body posted as `text/plain`
needs no preflight) and start runs. So, before anything else runs:

- a request whose `Origin` is neither allowed nor the server's own is refused with 403
  (HTTP and WebSocket alike); a request without `Origin` (curl, the Python and Node SDKs)
  passes untouched;
- a page is the server's own when its origin is the public URL's (`AGENTCTL_PUBLIC_URL`),
  or names the `Host` asked for where no DNS rebinding page can: a `Host` checked against
  the server's names (`agentctl dev`), an IP address or a loopback name. A page at
  `http://evil.example:8000`, its name rebound to the server's address, sends
  `Host: evil.example:8000` and that very origin: on `agentctl serve`, which answers to any
  `Host` (behind proxies, under names it cannot know), that is not enough;
- preflights (`OPTIONS` with `Access-Control-Request-Method`) from an allowed origin are
  answered here, on every path and before authentication (they carry no credentials);
- `agentctl dev` also refuses a `Host` that is not one of its own names: a page on a
  foreign name that resolves to 127.0.0.1 (DNS rebinding) sends no `Origin` on a GET;
- on `agentctl serve`, a browser's same-origin request without `Origin` (a GET, which
  browsers mark `Sec-Fetch-Site: same-origin`) is held to the same rule, its origin being
  the `Host` asked for: a rebinding page cannot read with GETs what it may not POST;
- a request that passed has its body read as JSON whatever its `Content-Type` says,
  since proxies drop or change it — safe only here, after the origin check, because a
  foreign page can send `text/plain` without a preflight.

The refused page sees only a CORS failure (a browser hides the body of an answer that does
not allow its origin), so each refused origin or `Host` is also logged, once, with the
setting that allows it: the developer looks at the server's console, not the page's.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentctl import serde

STUDIO_ORIGIN = "https://smith.langchain.com"  # LangGraph Studio
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]", ""})
MAX_GOOD_HOSTS = 256  # `Host` values remembered as good (names × ports): a bounded cache
# What the LangGraph SDKs (Python, JS), the development UI, MCP and A2A clients send.
ALLOW_HEADERS = (
    "accept, authorization, cache-control, content-type, last-event-id, prefer, "
    "x-api-key, x-auth-scheme, x-request-id, traceparent, tracestate, a2a-version, "
    "mcp-protocol-version, mcp-session-id"
)
# What they read: the run and stream URLs, paging, and the auth challenge.
EXPOSE_HEADERS = (
    b"location, content-location, x-pagination-next, x-pagination-total, www-authenticate"
)
ALLOW_METHODS = b"GET, POST, PUT, PATCH, DELETE, OPTIONS"
PREFLIGHT_MAX_AGE = b"600"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
JSON = b"application/json"
_LOOPBACK = "localhost, 127.0.0.1 or [::1], or the address given to --host"
# Refusals logged, at most: distinct origins and hosts, so a page sending random ones cannot
# grow the set (or the log) without bound.
MAX_LOGGED_REFUSALS = 100

log = logging.getLogger("agentctl.server")


def parse_origin(text: str) -> str:
    """An origin as browsers send it (`scheme://host[:port]`, lower case), or `*`; raises
    ValueError naming what is wrong."""
    text = text.strip()
    origin = text.rstrip("/").lower()
    if origin == "*":
        return origin
    scheme, sep, rest = origin.partition("://")
    if not sep or scheme not in ("http", "https") or not rest or "/" in rest or "@" in rest:
        raise ValueError(
            f"{text!r} is not an origin — write it as scheme://host[:port], e.g. "
            "http://localhost:3000 or https://chat.example.com (no path), or * for any"
        )
    return origin


def parse_origins(text: str | None) -> frozenset[str]:
    """A comma-separated list of origins (`AGENTCTL_CORS_ORIGINS`)."""
    return frozenset(parse_origin(part) for part in (text or "").split(",") if part.strip())


def _host_name(host: str) -> str:
    """A `Host` header (or an origin's host part) without its port."""
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.partition(":")[0]


@dataclass(frozen=True)
class OriginPolicy:
    """`origins`: exact origins allowed (`*` for any); these also get credentials, except
    `*`. `loopback`: any page served from this machine (any port) is allowed too.
    `hosts`: the names the server answers to (`Host`, without the port); None: any."""

    origins: frozenset[str] = frozenset()
    loopback: bool = False
    hosts: frozenset[str] | None = None
    # Any IP address is a good `Host` too (`dev` bound to all addresses): a rebinding page
    # names a domain, while other machines reach the server by address.
    ip_hosts: bool = False
    # The server's own origins (its public URL's): its pages, which need no CORS headers.
    own: frozenset[str] = frozenset()

    @classmethod
    def for_dev(cls, extra: Iterable[str] = (), bind_host: str = "127.0.0.1") -> OriginPolicy:
        """`agentctl dev`: pages on this machine and LangGraph Studio, plus `extra`; only
        loopback names and the bound address as `Host`. Bound to all addresses: also any IP
        address, this machine's names and the hosts of `extra`."""
        origins = frozenset({STUDIO_ORIGIN, *extra})
        if bind_host.lower() not in WILDCARD_HOSTS:
            bound = f"[{bind_host}]" if ":" in bind_host else bind_host
            return cls(origins, loopback=True, hosts=LOOPBACK_NAMES | {bound.lower()})
        names = {socket.gethostname().lower(), socket.getfqdn().lower()}
        names |= {_host_name(origin.partition("://")[2]) for origin in extra}
        return cls(origins, loopback=True, hosts=LOOPBACK_NAMES | names, ip_hosts=True)

    def serves(self, name: str) -> bool:
        """Whether `name` (a `Host` without its port) is one of this server's names."""
        if self.hosts is None or name in self.hosts:
            return True
        return self.ip_hosts and _is_ip(name)

    def allows(self, origin: str) -> bool:
        if origin in self.origins or "*" in self.origins:
            return True
        if not self.loopback:
            return False
        scheme, _, rest = origin.partition("://")
        return scheme in ("http", "https") and _host_name(rest) in LOOPBACK_NAMES

    def credentials(self, origin: str) -> bool:
        return origin in self.origins

    def is_own_host(self, name: str) -> bool:
        """Whether a page asking for `name` (a `Host` without its port) is the server's own:
        its `Host` is checked (`agentctl dev`), is the public URL's or an allowed origin's,
        or no page elsewhere can be served under it."""
        if self.hosts is not None or _unrebindable(name):
            return True
        named = self.own | self.origins
        return any(_host_name(origin.partition("://")[2]) == name for origin in named)

    def is_own(self, origin: str, host: str) -> bool:
        """Whether a page of `origin` is the server's own, asking with `Host: host` (see
        the module's docstring)."""
        if origin in self.own:
            return True
        if not _same_origin(origin, host):
            return False
        return self.hosts is not None or _unrebindable(_host_name(host))


class OriginGuard:
    """ASGI middleware applying an `OriginPolicy` (see the module's docstring)."""

    def __init__(self, app: ASGIApp, policy: OriginPolicy) -> None:
        self.app = app
        self.policy = policy
        # `Host` values found good, as sent: one set lookup a request (names × ports).
        self._good_hosts: set[bytes] = set()
        self._logged: set[str] = set()  # origins and hosts whose refusal was logged

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http" and kind != "websocket":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        raw_host = headers.get(b"host", b"")
        if self.policy.hosts is not None and raw_host not in self._good_hosts:
            name = raw_host.decode("latin-1").lower()
            if raw_host and not self.policy.serves(_host_name(name)):
                detail = f"host {name!r} is not served here — use {_LOOPBACK}"
                self._log_refusal(f"host {name}", detail)
                await _refuse(scope, send, detail)
                return
            if len(self._good_hosts) < MAX_GOOD_HOSTS:
                self._good_hosts.add(raw_host)
        raw_origin = headers.get(b"origin")
        if raw_origin is None and headers.get(b"sec-fetch-site") == b"same-origin":
            # A browser's same-origin GET: its page is at the `Host` asked for.
            name = _host_name(raw_host.decode("latin-1").lower())
            if not self.policy.is_own_host(name):
                detail = (
                    f"host {name!r} is not this server's public URL — a page on any name "
                    "that resolves to the server could read it (DNS rebinding): set "
                    "AGENTCTL_PUBLIC_URL to the URL the server is reached at"
                )
                self._log_refusal(f"host {name}", detail)
                await _refuse(scope, send, detail)
                return
        if raw_origin is None:  # not a browser's cross-site request: nothing to check
            if kind == "http":
                _read_as_json(scope, headers)
            await self.app(scope, receive, send)
            return
        host = raw_host.decode("latin-1").lower()
        origin = raw_origin.decode("latin-1").lower()
        allowed = self.policy.allows(origin)
        if not allowed and not self.policy.is_own(origin, host):
            detail = (
                f"origin {origin!r} may not call this server — list it in "
                "AGENTCTL_CORS_ORIGINS (agentctl dev: --cors-origin) to let its pages call"
            )
            if _same_origin(origin, host):  # a page served under a name not configured
                detail = (
                    f"origin {origin!r} is not this server's public URL — a page on any "
                    "name that resolves to the server could send it (DNS rebinding): set "
                    f"AGENTCTL_PUBLIC_URL to {origin} (or list it in AGENTCTL_CORS_ORIGINS)"
                )
            self._log_refusal(f"origin {origin}", self._origin_hint(origin, host))
            await _refuse(scope, send, detail)
            return
        if kind == "websocket":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS" and b"access-control-request-method" in headers:
            await self._preflight(send, origin, headers)
            return
        _read_as_json(scope, headers)
        if not allowed:  # same-origin: the browser needs no CORS headers
            await self.app(scope, receive, send)
            return
        cors = self._headers(origin)

        async def with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *cors]
            await send(message)

        await self.app(scope, receive, with_cors)

    def _origin_hint(self, origin: str, host: str) -> str:
        """What the log says of a refused page: how to allow it on this server."""
        try:
            parse_origin(origin)
        except ValueError:  # `null`: a file:// or sandboxed page
            return f"a page of origin {origin!r} may not call this server: serve it over http(s)"
        if _same_origin(origin, host):
            return (
                f"a page at {origin} may not call this server: if that is its address, set "
                f"AGENTCTL_PUBLIC_URL to {origin}"
            )
        if self.policy.loopback:  # agentctl dev
            allow = f"restart `agentctl dev` with --cors-origin {origin}"
        else:
            allow = "add it to AGENTCTL_CORS_ORIGINS (comma-separated)"
        return f"a page at {origin} may not call this server: to let it, {allow}"

    def _log_refusal(self, key: str, message: str) -> None:
        """Log `message` the first time `key` (an origin or a host) is refused."""
        if key in self._logged or len(self._logged) >= MAX_LOGGED_REFUSALS:
            return
        self._logged.add(key)
        log.warning("refused (403) %s", message)

    def _headers(self, origin: str) -> list[tuple[bytes, bytes]]:
        headers = [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-expose-headers", EXPOSE_HEADERS),
            (b"vary", b"Origin"),
        ]
        if self.policy.credentials(origin):
            headers.append((b"access-control-allow-credentials", b"true"))
        return headers

    async def _preflight(self, send: Send, origin: str, headers: dict[bytes, bytes]) -> None:
        # Any header the page asks for is allowed: the origin is trusted already.
        asked = headers.get(b"access-control-request-headers", b"")
        allow = ALLOW_HEADERS.encode() + (b", " + asked if asked else b"")
        response = [
            *self._headers(origin),
            (b"access-control-allow-methods", ALLOW_METHODS),
            (b"access-control-allow-headers", allow),
            (b"access-control-max-age", PREFLIGHT_MAX_AGE),
            (b"content-length", b"0"),
        ]
        await send({"type": "http.response.start", "status": 204, "headers": response})
        await send({"type": "http.response.body", "body": b""})


def _same_origin(origin: str, host: str) -> bool:
    """Whether `origin` names the `Host` asked for, as a page of the server would (`/docs`,
    the console)."""
    return bool(host) and origin.partition("://")[2] == host


def _unrebindable(name: str) -> bool:
    """Whether `name` (a `Host` without its port) is one no page elsewhere can be served
    under: an IP address or a loopback name (DNS rebinding needs a domain name)."""
    return name in LOOPBACK_NAMES or _is_ip(name)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def _read_as_json(scope: Scope, headers: dict[bytes, bytes]) -> None:
    """Give a request body the JSON content type, whatever the client said: every body
    this server takes is JSON, and proxies (e.g. Next.js API routes) drop or change it."""
    if scope["method"] not in BODY_METHODS:
        return
    content_type = headers.get(b"content-type")
    if content_type is not None and (
        content_type.startswith(JSON) or b"+json" in content_type.partition(b";")[0]
    ):
        return
    scope["headers"] = [
        *(item for item in scope["headers"] if item[0] != b"content-type"),
        (b"content-type", JSON),
    ]


async def _refuse(scope: Scope, send: Send, detail: str) -> None:
    if scope["type"] == "websocket":
        # Closing before the handshake is accepted makes the server answer it 403.
        await send({"type": "websocket.close", "code": 1008, "reason": "forbidden"})
        return
    body = serde.dumps({"detail": detail})
    headers = [(b"content-type", JSON), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 403, "headers": headers})
    await send({"type": "http.response.body", "body": body})
