"""Who is calling, and what they may see.

Every request but the public ones (`PUBLIC_PATHS`) is resolved to a `Caller` before any
route runs, by `Authentication` under the server's `AccessPolicy`:

- `Authorization: Bearer <token>` with `[auth]`: the provider's user. Such a caller is
  *scoped*: threads, runs, streams, state, crons and store items are theirs alone.
- `x-api-key: <deployment key>`: the operator, unscoped, with no user.
- nothing, where the policy allows anonymous access (`agentctl dev` without `[auth]`):
  unscoped, with no user, so user memory is skipped.
- in `agentctl dev` only, the development UI (`x-auth-scheme: langsmith`, from loopback).
- another agent of the platform calling in-process (`server/peers.py`): the `Caller` it
  put in the ASGI scope under `IN_CLUSTER`, which no network request can set.

Anything else is 401 (no valid credentials) or 503 (the identity provider did not answer).
Resources carry their creator in `metadata.owner`; a scoped caller's lookups of anything
not theirs look like 404, and no request can set or change an owner.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette._utils import get_route_path
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from agentctl import serde
from agentctl.auth import Authenticator
from agentctl.errors import AuthError, AuthUnavailable, Forbidden
from agentctl.runtime.namespaces import user_root
from agentctl.storage.base import OWNER

PUBLIC_PATHS = frozenset(
    {
        "/ok",
        "/info",
        "/openapi.json",
        "/.well-known/agent-card.json",  # A2A agent cards are public metadata
    }
)
# The web console's files and the API reference's: the pages hold no data, they call the
# API with the visitor's credentials.
CONSOLE_PREFIX = "/ui"
DOCS_PREFIX = "/docs"
PAGE_PREFIXES = (CONSOLE_PREFIX, DOCS_PREFIX)
# The provider's redirect back to the agent once a user consented (`routes/connections.py`):
# it proves what it is for with the flow its `state` names and the browser-binding cookie
# the flow's own signed-in user got, not with credentials.
CONNECT_CALLBACK = "/connections/callback"


def is_public(path: str, method: str = "GET") -> bool:
    """Whether `path` is served to anyone, without credentials: the public paths, the
    pages' files (`/ui`, `/ui/`, `/ui/<file>`, `/docs`, `/docs/<file>`, no deeper path),
    and GETs of the provider's callback."""
    if path in PUBLIC_PATHS or path in PAGE_PREFIXES:
        return True
    if path == CONNECT_CALLBACK:
        return method in ("GET", "HEAD")
    folder, _, name = path.rpartition("/")
    return folder in PAGE_PREFIXES and name not in (".", "..")


DEV_UI_HEADER = (b"x-auth-scheme", b"langsmith")
IN_CLUSTER = "agentctl.in_cluster_caller"  # the scope key of an in-process call's caller
_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True)
class Caller:
    """The principal of one request. `user` is None for the operator and anonymous callers,
    who are not scoped; a signed-in user is scoped to what they created. `operator`: the
    caller proved the deployment key (only they may deploy)."""

    user: str | None = None
    operator: bool = False

    @property
    def scoped(self) -> bool:
        return self.user is not None

    def owns(self, metadata: Mapping[str, Any] | None) -> bool:
        return self.user is None or (metadata or {}).get(OWNER) == self.user

    def stamp(self, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
        """Metadata of a new resource: the client's, with the owner set by the server."""
        stamped = without_owner(metadata)
        if self.user is not None:
            stamped[OWNER] = self.user
        return stamped

    def narrow(self, metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """A search filter limited to what the caller may see; None when the client's filter
        asks for another owner's records, so nothing can match."""
        narrowed = dict(metadata or {})
        if self.user is not None:
            if narrowed.get(OWNER, self.user) != self.user:
                return None
            narrowed[OWNER] = self.user
        return narrowed

    def may_use(self, namespace: Sequence[str]) -> bool:
        """Whether the caller may use the store in `namespace`."""
        return self.user is None or tuple(namespace[:2]) == user_root(self.user)

    def namespace(self, namespace: Sequence[str]) -> tuple[str, ...]:
        """`namespace`, when the caller may use the store there; else 403."""
        if not self.may_use(namespace):
            raise Forbidden(self._store_denied())
        return tuple(namespace)

    def namespace_prefix(self, prefix: Sequence[str]) -> tuple[str, ...]:
        """A search prefix limited to the caller's namespaces: a prefix of their root becomes
        the root; a prefix outside it is 403."""
        if self.user is None:
            return tuple(prefix)
        if user_root(self.user)[: len(prefix)] == tuple(prefix):
            return user_root(self.user)
        return self.namespace(prefix)

    def _store_denied(self) -> str:
        root = list(user_root(self.user or ""))
        return (
            f"this namespace is not yours — a signed-in user's store namespaces start with {root}"
        )


def without_owner(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """Client metadata with any `owner` dropped: only the server sets it."""
    return {k: v for k, v in (metadata or {}).items() if k != OWNER}


def caller_of(request: Request) -> Caller:
    """The caller `Authentication` resolved; none means the middleware did not run, so no
    one is let in."""
    caller = request.scope.get("state", {}).get("caller")
    if not isinstance(caller, Caller):
        raise AuthError("the request was not authenticated")
    return caller


@dataclass(frozen=True)
class AccessPolicy:
    """How a server admits requests.

    `authenticator`: end users' bearer tokens (`[auth]`). `api_key`: the deployment key the
    operator sends as `x-api-key`. `anonymous`: requests with neither are let in, unscoped
    (only without an authenticator). `dev_ui`: the development UI may bypass auth from
    loopback — `agentctl dev` only; no setting of the production server turns it on."""

    authenticator: Authenticator | None = None
    api_key: str | None = None
    anonymous: bool = False
    dev_ui: bool = False

    def __post_init__(self) -> None:
        if self.anonymous and self.authenticator is not None:
            raise ValueError("anonymous access and [auth] exclude each other")


class Authentication:
    """ASGI middleware: resolves the `Caller` of every non-public request, or answers it."""

    def __init__(self, app: ASGIApp, policy: Callable[[], AccessPolicy]) -> None:
        """`policy` gives the policy in force (a reload may change it)."""
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # On a platform, the path under the agent's root (`server/dispatch.py`).
        kind = scope["type"]
        if kind not in ("http", "websocket") or is_public(
            get_route_path(scope), scope.get("method", "GET")
        ):
            await self.app(scope, receive, send)
            return
        refuse = _refuse if kind == "http" else _refuse_socket(receive)
        try:
            caller = await self._resolve(scope)
        except (AuthError, AuthUnavailable) as exc:
            await refuse(send, exc.status, str(exc))
            return
        scope.setdefault("state", {})["caller"] = caller
        await self.app(scope, receive, send)

    async def _resolve(self, scope: Scope) -> Caller:
        in_cluster = scope.get(IN_CLUSTER)
        if isinstance(in_cluster, Caller):
            return in_cluster
        policy = self.policy()
        headers = dict(scope["headers"])
        if policy.dev_ui and _from_dev_ui(scope, headers):
            return Caller()
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, token = authorization.partition(" ")
        if policy.authenticator is not None and authorization:
            if scheme.lower() != "bearer":
                raise AuthError("send the session token as Authorization: Bearer <token>")
            identity = await policy.authenticator.authenticate(token)
            return Caller(user=identity.id)
        api_key = headers.get(b"x-api-key")
        if policy.api_key is not None and api_key is not None:
            if not hmac.compare_digest(api_key, policy.api_key.encode()):
                raise AuthError("the x-api-key is not this deployment's key")
            return Caller(operator=True)
        if policy.authenticator is not None:
            raise AuthError("sign in: send Authorization: Bearer <token>")
        if policy.anonymous:
            return Caller()
        raise AuthError("send the deployment key as x-api-key")


def _from_dev_ui(scope: Scope, headers: Mapping[bytes, bytes]) -> bool:
    client = scope.get("client")
    loopback = client is not None and client[0] in _LOOPBACK
    return loopback and headers.get(DEV_UI_HEADER[0]) == DEV_UI_HEADER[1]


def _refuse_socket(receive: Receive) -> Callable[[Send, int, str], Awaitable[None]]:
    """Refuse a WebSocket the way a browser can read: accept it, then close it with
    4000 + the HTTP status (4401: sign in) and the reason."""

    async def refuse(send: Send, status: int, detail: str) -> None:
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": 4000 + status, "reason": detail[:120]})

    return refuse


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = serde.dumps({"detail": detail})
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
