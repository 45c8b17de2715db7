"""`Connections`: one agent's users' OAuth connections to its user-owned MCP servers.

A connection is made by a consent flow (`begin` → `redirect` → `complete`), kept sealed in
the agent's `ConnectionStore`, and used by `access_token` (refreshed when it expires within
a minute; one refresh at a time per connection across replicas). A refresh refused, or a
token that no configured key opens, is no connection: the user is asked to consent again.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import hmac
import logging
import secrets
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus

import httpx
from mcp.shared.auth import OAuthClientInformationFull

from agentctl.connections import oauth
from agentctl.connections.mcp_client import Unauthorized, call_tool, list_tools
from agentctl.connections.sealing import TokenBox, Unreadable
from agentctl.errors import ConnectionFailed, ConsentRefused, Forbidden, NotFound, UserError
from agentctl.project.mcp import expand
from agentctl.project.model import McpServer
from agentctl.storage.base import ConnectionStore, ConsentFlow, UserConnection

log = logging.getLogger("agentctl.connections")
T = TypeVar("T")

FLOW_TTL = timedelta(minutes=10)  # a consent flow expires this long after it began
REFRESH_MARGIN = 60.0  # seconds: an access token expiring sooner is refreshed first
CLAIM_SECONDS = 15.0  # how long a replica's claim to refresh a connection holds
DISCOVERY_TTL = 3600.0  # seconds a server's discovered authorization server is reused
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class ConsentRequest:
    """A consent flow begun: the link the user opens to connect `server`."""

    server: str
    flow_id: str
    authorization_url: str
    expires_at: datetime


# The type of the interrupt a run raises when its user must connect a server.
CONNECTION_REQUIRED = "connection_required"


def consent_value(request: ConsentRequest, description: str | None) -> dict[str, Any]:
    """The value of the `connection_required` interrupt a run raises for `request`."""
    return {
        "type": CONNECTION_REQUIRED,
        "server": request.server,
        "description": description,
        "flow_id": request.flow_id,
        "authorization_url": request.authorization_url,
        "expires_at": request.expires_at.isoformat(),
        "message": (
            f"To use {request.server}, connect your account: open {request.authorization_url}"
        ),
    }


@dataclass(frozen=True)
class CompletedFlow:
    """A consent flow that made a connection: who, to what, and the run waiting for it."""

    flow_id: str
    user_id: str
    server: str
    thread_id: str | None
    assistant_id: str | None


@dataclass(frozen=True)
class ConnectionStatus:
    """One user-owned server as a user sees it (never a token)."""

    server: str
    description: str | None
    connected: bool
    scopes: tuple[str, ...] = ()
    connected_at: datetime | None = None
    expires_at: datetime | None = None

    def as_json(self) -> dict[str, Any]:
        def iso(when: datetime | None) -> str | None:
            return None if when is None else when.isoformat()

        return {
            "server": self.server,
            "description": self.description,
            "connected": self.connected,
            "scopes": list(self.scopes),
            "connected_at": iso(self.connected_at),
            "expires_at": iso(self.expires_at),
        }


def digest(secret: str) -> str:
    """How a flow's `state` and binding cookie are stored: sha256 hex."""
    return hashlib.sha256(secret.encode()).hexdigest()


class Connections:
    """The connections of one agent's users to its user-owned MCP servers.

    `servers`: the agent's MCP servers by name (those without `oauth` are ignored); `env`:
    the values of their `${VAR}`s; `callback_url`: `<public base>/connections/callback`,
    the redirect URI registered at providers; `base_url`: the agent's public base, of the
    links users open: the console's page of a flow, `<base_url>/ui/#/connect/<flow id>`, where
    only the flow's own signed-in user can go on to the provider."""

    def __init__(
        self,
        store: ConnectionStore,
        box: TokenBox,
        servers: Mapping[str, McpServer],
        env: Mapping[str, str],
        *,
        callback_url: str,
        base_url: str,
        client_name: str = "agentctl",
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.store = store
        self.box = box
        self.servers = {name: s for name, s in servers.items() if s.oauth is not None}
        self.env = env
        self.callback_url = callback_url
        self.base_url = base_url.rstrip("/")
        self.client_name = client_name
        self._http = http
        self._own_http: httpx.AsyncClient | None = None
        # One refresh at a time per connection in this process (gone when none waits).
        self._locks: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._discovered: dict[str, tuple[float, oauth.AuthServer]] = {}
        self._unreadable: set[tuple[str, str]] = set()  # already logged

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._own_http = self._http = httpx.AsyncClient(
                timeout=oauth.TIMEOUT, follow_redirects=False
            )
        return self._http

    async def aclose(self) -> None:
        if self._own_http is not None:
            await self._own_http.aclose()
            self._own_http = self._http = None

    def server(self, name: str) -> McpServer:
        """The user-owned server `name`; NotFound otherwise."""
        found = self.servers.get(name)
        if found is None:
            raise NotFound(f'this agent has no user-owned MCP server "{name}"')
        return found

    # -- tokens ---------------------------------------------------------------------------

    async def access_token(self, user_id: str, server: str) -> str | None:
        """A fresh access token of `user_id` for `server`, or None: not connected (consent
        needed). Refreshed first when it expires within a minute; of concurrent callers
        (here or on other replicas) one refreshes and the others use its token."""
        self.server(server)
        async with self._lock(user_id, server):
            deadline = time.monotonic() + 2 * CLAIM_SECONDS
            while True:
                connection = await self.store.get(user_id, server)
                if connection is None:
                    return None
                opened = self._open(connection)
                if opened is None:
                    return None
                tokens, current = opened
                if _fresh(tokens):
                    if not current:  # sealed with an older key: seal it with the first
                        resealed = replace(connection, sealed=self.box.seal(tokens))
                        await self.store.put(resealed, expected_version=connection.version)
                    return str(tokens["access_token"])
                claim = tokens.get("claim")
                if claim and claim > time.time() and time.monotonic() < deadline:
                    await asyncio.sleep(0.2)  # another replica refreshes it: wait for it
                    continue
                if not tokens.get("refresh_token"):
                    await self.store.delete(user_id, server)
                    log.info('the token of a user for "%s" expired; consent again', server)
                    return None
                claimed = replace(
                    connection,
                    sealed=self.box.seal({**tokens, "claim": time.time() + CLAIM_SECONDS}),
                    updated_at=datetime.now(UTC),
                )
                if not await self.store.put(claimed, expected_version=connection.version):
                    continue  # changed meanwhile: read it again
                with self._redacting(server):
                    refreshed = await self._refresh(user_id, server, tokens, connection.version + 1)
                if refreshed is None or isinstance(refreshed, str):
                    return refreshed

    async def _refresh(
        self, user_id: str, server: str, tokens: dict[str, Any], version: int
    ) -> str | bool | None:
        """Refresh the claimed connection at `version`: the new access token, None (refused:
        the connection is gone), or False (another writer won: read it again)."""
        client = self._client(server, tokens["client"])
        try:
            fresh = await oauth.refresh(
                self.http,
                server,
                tokens["token_endpoint"],
                client,
                refresh_token=tokens["refresh_token"],
                resource=tokens["resource"],
            )
        except oauth.InvalidGrant:
            await self.store.delete(user_id, server)
            log.info('a refresh token for "%s" was refused; the user must consent again', server)
            return None
        except ConnectionFailed:
            connection = await self.store.get(user_id, server)
            if connection is not None and connection.version == version:  # release the claim
                unclaimed = replace(connection, sealed=self.box.seal(tokens))
                await self.store.put(unclaimed, expected_version=version)
            raise
        stored = {**tokens, **_token_fields(fresh)}
        stored.pop("claim", None)
        connection = await self.store.get(user_id, server)
        if connection is None or connection.version != version:
            return False
        written = replace(
            connection,
            sealed=self.box.seal(stored),
            scopes=_scopes(fresh.scope, connection.scopes),
            expires_at=_when(fresh.expires_at),
            updated_at=datetime.now(UTC),
        )
        if not await self.store.put(written, expected_version=version):
            return False
        return fresh.access_token

    async def invalidate(self, user_id: str, server: str, token: str) -> None:
        """`server` answered 401 to `token`: the next `access_token` refreshes it."""
        async with self._lock(user_id, server):
            connection = await self.store.get(user_id, server)
            if connection is None:
                return
            opened = self._open(connection)
            if opened is None or not hmac.compare_digest(opened[0]["access_token"], token):
                return
            tokens = opened[0]
            expired = replace(
                connection,
                sealed=self.box.seal({**tokens, "expires_at": 0, "issued_at": 0}),
                expires_at=_EPOCH,
                updated_at=datetime.now(UTC),
            )
            await self.store.put(expired, expected_version=connection.version)

    def _open(self, connection: UserConnection) -> tuple[dict[str, Any], bool] | None:
        """The token set of `connection` and whether the first key sealed it; None when no
        key opens it (logged once)."""
        try:
            return self.box.open(connection.sealed)
        except Unreadable:
            key = (connection.user_id, connection.server)
            if key not in self._unreadable:
                self._unreadable.add(key)
                log.warning(
                    'a connection to "%s" cannot be opened with the configured keys '
                    "(AGENTCTL_SECRETS_KEY changed?); its user is asked to connect again",
                    connection.server,
                )
            return None

    def _lock(self, user_id: str, server: str) -> asyncio.Lock:
        return self._locks.setdefault((user_id, server), asyncio.Lock())

    # -- consent --------------------------------------------------------------------------

    async def begin(
        self,
        user_id: str,
        server: str,
        *,
        thread_id: str | None = None,
        assistant_id: str | None = None,
    ) -> ConsentRequest:
        """A new consent flow of `user_id` for `server` (expiring in 10 minutes)."""
        self.server(server)
        now = datetime.now(UTC)
        await self.store.purge_flows(now - timedelta(hours=1))
        flow = ConsentFlow(
            flow_id=secrets.token_urlsafe(32),
            user_id=user_id,
            server=server,
            thread_id=thread_id,
            assistant_id=assistant_id,
            status="pending",
            created_at=now,
            expires_at=now + FLOW_TTL,
        )
        await self.store.add_flow(flow)
        return ConsentRequest(
            server,
            flow.flow_id,
            f"{self.base_url}/ui/#/connect/{flow.flow_id}",
            flow.expires_at,
        )

    async def flow(self, flow_id: str, *, user_id: str | None = None) -> ConsentFlow:
        """A flow not yet used; `user_id` given: it must be that user's (else NotFound)."""
        flow = await self.store.get_flow(flow_id)
        if flow is None or (user_id is not None and flow.user_id != user_id):
            raise NotFound("no such connection request — start connecting again")
        if flow.expires_at <= datetime.now(UTC):
            raise ConsentRefused(
                f"this request to connect {flow.server} expired — start connecting again"
            )
        if flow.status != "pending":
            raise ConsentRefused(
                f"this link to connect {flow.server} was already used — start connecting again"
            )
        return flow

    async def redirect(self, flow_id: str, *, user_id: str | None = None) -> tuple[str, str]:
        """The provider's authorization URL for flow `flow_id`, and the binding cookie's
        value the callback must bring back. Once per flow. `user_id` given (a signed-in
        caller): it must be the flow's user."""
        flow = await self.flow(flow_id, user_id=user_id)
        name = flow.server
        with self._redacting(name):
            auth_server = await self._discover(name)
            client, sealed_client = await self._registered(name, auth_server)
        pkce = oauth.PKCEParameters.generate()
        state, binding = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        secret = {
            "verifier": pkce.code_verifier,
            "redirect_uri": self.callback_url,
            "issuer": auth_server.issuer,
            "token_endpoint": auth_server.token_endpoint,
            "revocation_endpoint": auth_server.revocation_endpoint,
            "revocation_methods": auth_server.revocation_methods,
            "resource": auth_server.resource,
            "scopes": auth_server.scopes,
            "client": sealed_client,
        }
        advanced = replace(
            flow,
            status="redirected",
            state_hash=digest(state),
            binding_hash=digest(binding),
            sealed=self.box.seal(secret),
        )
        if not await self.store.advance_flow(advanced, from_status="pending"):
            raise ConsentRefused(
                f"this link to connect {name} was already used — start connecting again"
            )
        url = oauth.authorization_url(auth_server, client, self.callback_url, state, pkce)
        return url, binding

    async def complete(
        self,
        state: str | None,
        code: str | None,
        binding: str | None,
        *,
        error: str | None = None,
        error_description: str | None = None,
    ) -> CompletedFlow:
        """The provider's callback: check `state` (known, unexpired, not used) and the
        browser's `binding`, exchange `code`, store the tokens sealed."""
        if not state:
            raise ConsentRefused("the callback has no state — start connecting again")
        flow = await self.store.flow_by_state(digest(state))
        if flow is None:
            raise ConsentRefused(
                "this authorization callback is unknown or forged — start connecting again"
            )
        if flow.status != "redirected":
            raise ConsentRefused(
                f"this authorization callback for {flow.server} was already used — start "
                "connecting again"
            )
        done = replace(flow, status="done")
        failed = replace(flow, status="failed")
        if not await self.store.advance_flow(done, from_status="redirected"):
            raise ConsentRefused(
                f"this authorization callback for {flow.server} was already used — start "
                "connecting again"
            )
        refusal = self._refusal(flow, binding, error, error_description)
        if refusal is None and not code:
            refusal = f"the provider of {flow.server} sent no authorization code"
        if refusal is not None:
            await self.store.advance_flow(failed, from_status="done")
            raise ConsentRefused(f"{refusal} — start connecting again")
        try:
            with self._redacting(flow.server):
                await self._connect(flow, str(code))
        except (ConnectionFailed, Unreadable, UserError) as exc:
            await self.store.advance_flow(failed, from_status="done")
            if isinstance(exc, Unreadable):
                raise ConsentRefused(
                    "this connection request cannot be read with the server's keys — start "
                    "connecting again"
                ) from None
            raise
        return CompletedFlow(
            flow.flow_id, flow.user_id, flow.server, flow.thread_id, flow.assistant_id
        )

    def _refusal(
        self,
        flow: ConsentFlow,
        binding: str | None,
        error: str | None,
        description: str | None,
    ) -> str | None:
        if flow.expires_at <= datetime.now(UTC):
            return f"this request to connect {flow.server} expired"
        if (
            not binding
            or flow.binding_hash is None
            or not hmac.compare_digest(digest(binding), flow.binding_hash)
        ):
            return (
                f"this authorization callback for {flow.server} did not come back to the "
                "browser that started it (its cookie is missing or wrong) — open the link in "
                "one browser from start to end"
            )
        if error:
            said = oauth.short(f"{error}: {description}" if description else error)
            return f"the provider of {flow.server} refused the connection ({said})"
        return None

    async def _connect(self, flow: ConsentFlow, code: str) -> None:
        assert flow.sealed is not None
        secret, _ = self.box.open(flow.sealed)
        client = self._client(flow.server, secret["client"])
        tokens = await oauth.exchange(
            self.http,
            flow.server,
            secret["token_endpoint"],
            client,
            code=code,
            verifier=secret["verifier"],
            redirect_uri=secret["redirect_uri"],
            resource=secret["resource"],
        )
        stored = {
            **_token_fields(tokens),
            "issuer": secret["issuer"],
            "token_endpoint": secret["token_endpoint"],
            "revocation_endpoint": secret["revocation_endpoint"],
            "revocation_methods": secret.get("revocation_methods"),
            "resource": secret["resource"],
            "client": secret["client"],
        }
        now = datetime.now(UTC)
        requested = tuple((secret.get("scopes") or "").split())
        connection = UserConnection(
            user_id=flow.user_id,
            server=flow.server,
            sealed=self.box.seal(stored),
            scopes=_scopes(tokens.scope, requested),
            expires_at=_when(tokens.expires_at),
            connected_at=now,
            updated_at=now,
        )
        async with self._lock(flow.user_id, flow.server):
            await self.store.put(connection, expected_version=None)
        self._unreadable.discard((flow.user_id, flow.server))

    # -- discovery and clients ------------------------------------------------------------

    async def _discover(self, name: str) -> oauth.AuthServer:
        cached = self._discovered.get(name)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        server = self.server(name)
        assert server.oauth is not None
        found = await oauth.discover(
            self.http,
            name,
            self._expand(server, server.url),
            transport=server.transport,
            headers=self._headers(server),
            scopes=server.oauth.scopes,
        )
        self._discovered[name] = (time.monotonic() + DISCOVERY_TTL, found)
        return found

    async def _registered(
        self, name: str, auth_server: oauth.AuthServer
    ) -> tuple[OAuthClientInformationFull, dict[str, Any]]:
        """The client for `name` at its authorization server, and how a flow and the tokens
        keep it: a configured client by id and method (its secret is read from the env when
        used), a registered one whole."""
        server = self.server(name)
        assert server.oauth is not None
        if server.oauth.client_id is not None:
            secret = server.oauth.client_secret
            client = oauth.client_info(
                self._expand(server, server.oauth.client_id),
                None if secret is None else self._expand(server, secret),
                self.callback_url,
                auth_server,
            )
            kept = {"client_id": client.client_id, "method": client.token_endpoint_auth_method}
            return client, kept
        sealed = await self.store.get_client(name, auth_server.issuer)
        if sealed is not None:
            try:
                value, current = self.box.open(sealed)
            except Unreadable:
                value, current = {}, True
            known = OAuthClientInformationFull.model_validate(value) if value else None
            if known is not None and _usable(known, self.callback_url):
                if not current:  # sealed with an older key: seal it with the first
                    await self.store.put_client(name, auth_server.issuer, self.box.seal(value))
                return known, {"registered": value}
        client = await oauth.register(
            self.http, name, auth_server, self.callback_url, self.client_name
        )
        value = client.model_dump(mode="json", exclude_none=True)
        await self.store.put_client(name, auth_server.issuer, self.box.seal(value))
        return client, {"registered": value}

    def _client(self, name: str, kept: dict[str, Any]) -> OAuthClientInformationFull:
        """The client a flow or a connection kept (see `_registered`)."""
        if "registered" in kept:
            return OAuthClientInformationFull.model_validate(kept["registered"])
        server = self.server(name)
        assert server.oauth is not None
        secret = server.oauth.client_secret
        return OAuthClientInformationFull(
            client_id=kept["client_id"],
            client_secret=None if secret is None else self._expand(server, secret),
            token_endpoint_auth_method=kept["method"],
            redirect_uris=None,
        )

    def _expand(self, server: McpServer, text: str) -> str:
        try:
            return expand(text, self.env)
        except KeyError as exc:
            raise UserError(
                f'MCP server "{server.name}" needs the environment variable {exc.args[0]}, '
                "which is not set — add it to .env"
            ) from None

    @contextmanager
    def _redacting(self, name: str) -> Iterator[None]:
        """A `ConnectionFailed` of server `name` without the values of its `${VAR}`s (a
        URL may carry one)."""
        try:
            yield
        except ConnectionFailed as exc:
            server = self.servers.get(name)
            names = server.env_names if server is not None else ()
            message = str(exc)
            for value in (self.env[n] for n in names if n in self.env):
                for form in {value, quote(value), quote(value, safe=""), quote_plus(value)}:
                    if len(form) >= 3:
                        message = message.replace(form, "***")
            raise ConnectionFailed(message) from None

    def _headers(self, server: McpServer) -> dict[str, str]:
        return {name: self._expand(server, value) for name, value in server.headers.items()}

    # -- seeing, revoking, using ----------------------------------------------------------

    async def list(self, user_id: str) -> builtins.list[ConnectionStatus]:
        """Every user-owned server, and whether (and how) `user_id` is connected to it."""
        held = {c.server: c for c in await self.store.list(user_id)}
        statuses = []
        for name, server in sorted(self.servers.items()):
            connection = held.get(name)
            if connection is None or self._open(connection) is None:
                statuses.append(ConnectionStatus(name, server.description, False))
                continue
            statuses.append(
                ConnectionStatus(
                    name,
                    server.description,
                    True,
                    connection.scopes,
                    connection.connected_at,
                    connection.expires_at,
                )
            )
        return statuses

    async def revoke(self, user_id: str, server: str | None = None) -> int:
        """Remove `user_id`'s connection to `server` (None: to every server), revoking its
        tokens at the provider first where it offers revocation (best effort)."""
        if server is not None:
            self.server(server)
            found = await self.store.get(user_id, server)
            held = [] if found is None else [found]
        else:
            held = await self.store.list(user_id)
        for connection in held:
            opened = self._open(connection)
            if opened is not None and opened[0].get("revocation_endpoint"):
                await self._revoke_tokens(connection.server, opened[0])
        return await self.store.delete(user_id, server)

    async def _revoke_tokens(self, name: str, tokens: dict[str, Any]) -> None:
        try:
            client = self._client(name, tokens["client"])
        except (UserError, NotFound):
            return  # the server or its variables are gone: nothing to revoke with
        endpoint = tokens["revocation_endpoint"]
        for kind in ("refresh_token", "access_token"):
            if tokens.get(kind) and not await oauth.revoke(
                self.http, endpoint, client, tokens[kind], kind, tokens.get("revocation_methods")
            ):
                log.warning('revoking a %s at "%s" (%s) failed; deleted here', kind, name, endpoint)

    async def counts(self) -> dict[str, int]:
        """Users connected, per user-owned server (never a token)."""
        held = await self.store.counts()
        return {name: held.get(name, 0) for name in sorted(self.servers)}

    async def catalog(self, server: str) -> builtins.list[dict[str, Any]] | None:
        """The tools `server` last listed to a user (None: nobody connected yet)."""
        self.server(server)
        return await self.store.get_catalog(server)

    async def list_tools(self, user_id: str, server: str) -> builtins.list[dict[str, Any]] | None:
        """The tools `server` lists to `user_id` (None: not connected), kept as the
        server's catalog."""
        tools = await self._as_user(user_id, server, list_tools)
        if tools is not None:
            await self.store.put_catalog(server, tools)
        return tools

    async def call_tool(
        self, user_id: str, server: str, tool: str, arguments: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Call `tool` of `server` as `user_id`: its MCP result (JSON), None when not
        connected (consent needed)."""

        async def call(url: str, transport: str, headers: dict[str, str]) -> dict[str, Any]:
            return await call_tool(url, transport, headers, tool, arguments)

        return await self._as_user(user_id, server, call)

    async def _as_user(
        self,
        user_id: str,
        server: str,
        action: Callable[[str, str, dict[str, str]], Awaitable[T]],
    ) -> T | None:
        """`action(url, transport, headers)` with the user's token; a 401 refreshes the
        token once and tries again; still refused: None (consent needed)."""
        config = self.server(server)
        url = self._expand(config, config.url)
        for attempt in range(2):
            token = await self.access_token(user_id, server)
            if token is None:
                return None
            headers = {**self._headers(config), "Authorization": f"Bearer {token}"}
            try:
                with self._redacting(server):
                    return await action(url, config.transport, headers)
            except Unauthorized:
                await self.invalidate(user_id, server, token)
                if attempt:
                    await self.store.delete(user_id, server)
        return None

    def check_user(self, user_id: str | None, server: str) -> str:
        """`user_id`, or Forbidden naming why a run without a signed-in user cannot use a
        user-owned server."""
        if not user_id:
            raise Forbidden(
                f"{server} acts as the signed-in user; this run has none (anonymous, or the "
                "deployment key) — sign in to use it"
            )
        return user_id


def _fresh(tokens: dict[str, Any]) -> bool:
    """Whether the access token is used as it is: it expires in more than a minute (or
    half its lifetime, for tokens living less than two minutes)."""
    expires = tokens.get("expires_at")
    if expires is None:
        return True
    lifetime = expires - tokens.get("issued_at", expires - 2 * REFRESH_MARGIN)
    return bool(expires > time.time() + min(REFRESH_MARGIN, lifetime / 2))


def _token_fields(tokens: oauth.Tokens) -> dict[str, Any]:
    return {
        "issued_at": time.time(),
        "access_token": tokens.access_token,
        "refresh_token": tokens.refresh_token,
        "token_type": tokens.token_type,
        "scope": tokens.scope,
        "expires_at": tokens.expires_at,
    }


def _scopes(granted: str | None, otherwise: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(granted.split()) if granted else otherwise


def _when(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def _usable(client: OAuthClientInformationFull, redirect_uri: str) -> bool:
    """A registered client still fit for use: this redirect URI, an unexpired secret."""
    uris = [str(uri) for uri in client.redirect_uris or []]
    expires = client.client_secret_expires_at
    return redirect_uri in uris and (not expires or expires > time.time() + 60)
