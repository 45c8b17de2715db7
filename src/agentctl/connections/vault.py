"""`Connections`: one agent's users' OAuth connections to its user-owned MCP servers.

A connection is made by a consent flow (`begin` → `redirect` → `complete`, `flows.py`),
kept sealed in the agent's `ConnectionStore`, and used by `access_token` (refreshed when it
expires within a minute; one refresh at a time per connection across replicas) to call the
server as its user. A refresh refused, or a token that no configured key opens, is no
connection: the user is asked to consent again. `revoke` removes connections (and revokes
them at the provider). The providers are reached through `clients.py`.
"""

from __future__ import annotations

import asyncio
import builtins
import hmac
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx

from agentctl.connections import oauth
from agentctl.connections.clients import Clients
from agentctl.connections.flows import CompletedFlow, ConsentRequest, Flows
from agentctl.connections.mcp_client import Unauthorized, call_tool, list_tools
from agentctl.connections.sealing import TokenBox, Unreadable
from agentctl.errors import ConnectionFailed, NotFound, UserError
from agentctl.observability import tracing
from agentctl.project.model import McpServer
from agentctl.storage.base import ConnectionStore, ConsentFlow, UserConnection

log = logging.getLogger("agentctl.connections")
T = TypeVar("T")

REFRESH_MARGIN = 60.0  # seconds: an access token expiring sooner is refreshed first
CLAIM_SECONDS = 15.0  # how long a replica's claim to refresh a connection holds
REFRESH_SECONDS = 10.0  # a refresh gives up after this long, within its claim
REVOKE_SECONDS = 5.0  # how long revoking a connection waits on its provider
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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


class Connections:
    """The connections of one agent's users to its user-owned MCP servers.

    `servers`: the agent's MCP servers by name (those without `oauth` are ignored); `env`:
    the values of their `${VAR}`s; `callback_url`: `<public base>/connections/callback`,
    the redirect URI registered at providers; `base_url`: the agent's public base, of the
    links users open: the console's page of a flow, `<base_url>/ui/#/connect/<flow id>`."""

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
        self.clients = Clients(
            store,
            box,
            self.servers,
            env,
            callback_url=callback_url,
            client_name=client_name,
            http=http,
        )
        self.flows = Flows(store, box, self.clients, base_url=base_url)
        # One refresh at a time per connection in this process (gone when none waits).
        self._locks: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._unreadable: set[tuple[str, str]] = set()  # already logged

    async def aclose(self) -> None:
        await self.clients.aclose()

    def server(self, name: str) -> McpServer:
        """The user-owned server `name`; NotFound otherwise."""
        return self.clients.server(name)

    # -- consent (`flows.py`) -------------------------------------------------------------

    async def begin(
        self,
        user_id: str,
        server: str,
        *,
        thread_id: str | None = None,
        assistant_id: str | None = None,
    ) -> ConsentRequest:
        """A new consent flow of `user_id` for `server` (expiring in 10 minutes)."""
        return await self.flows.begin(
            user_id, server, thread_id=thread_id, assistant_id=assistant_id
        )

    async def flow(self, flow_id: str, *, user_id: str | None = None) -> ConsentFlow:
        """A flow not yet used; `user_id` given: it must be that user's (else NotFound)."""
        return await self.flows.flow(flow_id, user_id=user_id)

    async def redirect(self, flow_id: str, *, user_id: str | None = None) -> tuple[str, str]:
        """The provider's authorization URL for flow `flow_id`, and the binding cookie's
        value the callback must bring back. Once per flow."""
        return await self.flows.redirect(flow_id, user_id=user_id)

    async def complete(
        self,
        state: str | None,
        code: str | None,
        binding: str | None,
        *,
        error: str | None = None,
        error_description: str | None = None,
    ) -> CompletedFlow:
        """The provider's callback: the flow checked, the code exchanged, the connection
        stored (replacing any of that user to that server)."""
        flow, connection = await self.flows.complete(
            state, code, binding, error=error, error_description=error_description
        )
        async with self._lock(flow.user_id, flow.server):
            await self.store.put(connection, expected_version=None)
        self._unreadable.discard((flow.user_id, flow.server))
        return flow

    # -- tokens ---------------------------------------------------------------------------

    async def access_token(self, user_id: str, server: str) -> str | None:
        """A fresh access token of `user_id` for `server`, or None: not connected (consent
        needed). Refreshed first when it expires within a minute; of concurrent callers
        (here or on other replicas) one refreshes and the others use its token."""
        self.server(server)
        async with self._lock(user_id, server):
            give_up = time.monotonic() + CLAIM_SECONDS
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
                if claim and claim > time.time():  # another replica refreshes it
                    if time.monotonic() < give_up:
                        await asyncio.sleep(0.2)  # wait for its token
                        continue
                    return _while_claimed(server, tokens)
                if not tokens.get("refresh_token"):
                    if not await self.store.delete(user_id, server, version=connection.version):
                        continue  # changed meanwhile (a reconnection): read it again
                    log.info('the token of a user for "%s" expired; consent again', server)
                    return None
                claimed = replace(
                    connection,
                    sealed=self.box.seal({**tokens, "claim": time.time() + CLAIM_SECONDS}),
                    updated_at=datetime.now(UTC),
                )
                if not await self.store.put(claimed, expected_version=connection.version):
                    continue  # changed meanwhile: read it again
                with self.clients.redacting(server):
                    refreshed = await self._refresh(user_id, server, tokens, connection.version + 1)
                if refreshed is None or isinstance(refreshed, str):
                    return refreshed

    async def _refresh(
        self, user_id: str, server: str, tokens: dict[str, Any], version: int
    ) -> str | bool | None:
        """Refresh the connection claimed at `version`: the new access token, None (refused:
        the connection is gone), or False (another writer won: read it again). The claim is
        released whatever fails (the provider, the client's variables, a cancellation)."""
        settled = False  # the claimed row was replaced or deleted: nothing to release
        try:
            client = self.clients.client(server, tokens["client"])
            try:
                async with asyncio.timeout(REFRESH_SECONDS):
                    fresh = await oauth.refresh(
                        self.clients.http,
                        server,
                        tokens["token_endpoint"],
                        client,
                        refresh_token=tokens["refresh_token"],
                        resource=tokens["resource"],
                    )
            except oauth.GrantRefused as refused:
                if not await self.store.delete(user_id, server, version=version):
                    return False  # reconnected meanwhile: that connection stays
                settled = True
                log.info(
                    'a refresh for "%s" was refused (%s); the user must consent again',
                    server,
                    refused,
                )
                return None
            except TimeoutError:
                raise ConnectionFailed(
                    f'MCP server "{server}": its token endpoint {tokens["token_endpoint"]} did '
                    f"not answer a refresh within {REFRESH_SECONDS:g} seconds — try again later"
                ) from None
            stored = {**tokens, **fresh.fields()}
            stored.pop("claim", None)
            connection = await self.store.get(user_id, server)
            if connection is None or connection.version != version:
                return False
            written = replace(
                connection,
                sealed=self.box.seal(stored),
                scopes=fresh.granted(connection.scopes),
                expires_at=fresh.expiry,
                updated_at=datetime.now(UTC),
            )
            if not await self.store.put(written, expected_version=version):
                return False
            settled = True
            return fresh.access_token
        finally:
            if not settled:
                await asyncio.shield(self._release(user_id, server, tokens, version))

    async def _release(
        self, user_id: str, server: str, tokens: dict[str, Any], version: int
    ) -> None:
        """Give up the claim at `version` (when nobody replaced it): the token set as it was."""
        connection = await self.store.get(user_id, server)
        if connection is not None and connection.version == version:
            unclaimed = replace(connection, sealed=self.box.seal(tokens))
            await self.store.put(unclaimed, expected_version=version)

    async def invalidate(
        self, user_id: str, server: str, token: str, *, drop: bool = False
    ) -> None:
        """`server` answered 401 to `token`: the next `access_token` refreshes it (`drop`:
        the connection is removed instead, unless it changed since `token`)."""
        async with self._lock(user_id, server):
            connection = await self.store.get(user_id, server)
            if connection is None:
                return
            opened = self._open(connection)
            if opened is None or not hmac.compare_digest(opened[0]["access_token"], token):
                return
            if drop:
                await self.store.delete(user_id, server, version=connection.version)
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
        """Remove `user_id`'s connection to `server` (None: to every server), configured or
        not (a server since removed from mcp.json), and end the user's consent flows for it
        (expired flows of anyone are purged too); how many connections. The tokens are then
        revoked at the provider where it offers revocation: best effort, at most
        `REVOKE_SECONDS`, after the connection is gone."""
        if server is not None:
            found = await self.store.get(user_id, server)
            held = [] if found is None else [found]
        else:
            held = await self.store.list(user_id)
        removed = await self.store.delete(user_id, server)
        await self.store.delete_flows(user_id, server)
        await self.flows.purge()
        revocable = [
            (connection.server, opened[0])
            for connection in held
            if (opened := self._open(connection)) is not None
            and opened[0].get("revocation_endpoint")
        ]
        await asyncio.gather(*(self._revoke_tokens(name, tokens) for name, tokens in revocable))
        return removed

    async def _revoke_tokens(self, name: str, tokens: dict[str, Any]) -> None:
        """Revoke the refresh token, then the access token, at `name`'s authorization
        server, within `REVOKE_SECONDS`; a failure is logged (never the token)."""
        try:
            client = self.clients.client(name, tokens["client"])
        except (UserError, NotFound):
            return  # the server or its variables are gone: nothing to revoke with
        endpoint = tokens["revocation_endpoint"]
        kinds = [kind for kind in ("refresh_token", "access_token") if tokens.get(kind)]
        try:
            async with asyncio.timeout(REVOKE_SECONDS):
                for kind in kinds:
                    methods = tokens.get("revocation_methods")
                    if not await oauth.revoke(
                        self.clients.http, endpoint, client, tokens[kind], kind, methods
                    ):
                        log.warning(
                            'revoking a %s at "%s" (%s) failed; deleted here', kind, name, endpoint
                        )
                        return
        except TimeoutError:
            log.warning(
                'revoking the tokens at "%s" (%s) took over %g seconds; deleted here',
                name,
                endpoint,
                REVOKE_SECONDS,
            )

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
            # its span's trace context goes with the call: the server's spans are its children
            with tracing.mcp_client_span("tools/call", tool, url, server) as traced:
                headers = {**headers, **traced.headers}
                result = await call_tool(url, transport, headers, tool, arguments)
                if result.get("isError"):
                    traced.failed()
                return result

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
        url = self.clients.expand(config, config.url)
        for attempt in range(2):
            token = await self.access_token(user_id, server)
            if token is None:
                return None
            headers = {**self.clients.headers(config), "Authorization": f"Bearer {token}"}
            try:
                with self.clients.redacting(server):
                    return await action(url, config.transport, headers)
            except Unauthorized:  # refresh it and try again; refused twice: consent again
                await self.invalidate(user_id, server, token, drop=bool(attempt))
        return None


def _fresh(tokens: dict[str, Any]) -> bool:
    """Whether the access token is used as it is: it expires in more than a minute (or
    half its lifetime, for tokens living less than two minutes)."""
    expires = tokens.get("expires_at")
    if expires is None:
        return True
    lifetime = expires - tokens.get("issued_at", expires - 2 * REFRESH_MARGIN)
    return bool(expires > time.time() + min(REFRESH_MARGIN, lifetime / 2))


def _while_claimed(server: str, tokens: dict[str, Any]) -> str:
    """The access token of a connection another replica is still refreshing, while it is
    valid; else a `ConnectionFailed` (the claim is never taken over while it holds)."""
    if (tokens.get("expires_at") or 0) > time.time():
        return str(tokens["access_token"])
    raise ConnectionFailed(
        f'MCP server "{server}": this user\'s token is being refreshed by another replica, '
        "which takes longer than it should — try again in a few seconds"
    )
