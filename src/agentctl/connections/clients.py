"""`Clients`: how agentctl reaches the authorization servers of one agent's user-owned MCP
servers — each server's configuration with its `${VAR}`s expanded, its authorization server
discovered (and reused for an hour), the OAuth client agentctl is there (configured in
mcp.json, or registered and kept sealed), and errors without the variables' values."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, quote_plus

import httpx
from mcp.shared.auth import OAuthClientInformationFull

from agentctl.connections import oauth
from agentctl.connections.sealing import TokenBox, Unreadable
from agentctl.errors import ConnectionFailed, NotFound, UserError
from agentctl.project.mcp import expand
from agentctl.project.model import McpServer
from agentctl.storage.base import ConnectionStore

DISCOVERY_TTL = 3600.0  # seconds a server's discovered authorization server is reused


class Clients:
    """`servers`: the user-owned MCP servers by name; `env`: the values of their `${VAR}`s;
    `callback_url`: the redirect URI registered at providers; `client_name`: the name a
    registered client is given; `http`: the client to send requests with (None: one of its
    own, closed by `aclose`)."""

    def __init__(
        self,
        store: ConnectionStore,
        box: TokenBox,
        servers: Mapping[str, McpServer],
        env: Mapping[str, str],
        *,
        callback_url: str,
        client_name: str,
        http: httpx.AsyncClient | None,
    ) -> None:
        self.store = store
        self.box = box
        self.servers = servers
        self.env = env
        self.callback_url = callback_url
        self.client_name = client_name
        self._http = http
        self._own_http: httpx.AsyncClient | None = None
        self._discovered: dict[str, tuple[float, oauth.AuthServer]] = {}

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

    async def discover(self, name: str) -> oauth.AuthServer:
        """The authorization server of `name` (discovered at most once an hour)."""
        cached = self._discovered.get(name)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        server = self.server(name)
        assert server.oauth is not None
        found = await oauth.discover(
            self.http,
            name,
            self.expand(server, server.url),
            transport=server.transport,
            headers=self.headers(server),
            scopes=server.oauth.scopes,
        )
        self._discovered[name] = (time.monotonic() + DISCOVERY_TTL, found)
        return found

    async def registered(
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
                self.expand(server, server.oauth.client_id),
                None if secret is None else self.expand(server, secret),
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

    def client(self, name: str, kept: dict[str, Any]) -> OAuthClientInformationFull:
        """The client a flow or a connection kept (see `registered`)."""
        if "registered" in kept:
            return OAuthClientInformationFull.model_validate(kept["registered"])
        server = self.server(name)
        assert server.oauth is not None
        secret = server.oauth.client_secret
        return OAuthClientInformationFull(
            client_id=kept["client_id"],
            client_secret=None if secret is None else self.expand(server, secret),
            token_endpoint_auth_method=kept["method"],
            redirect_uris=None,
        )

    def expand(self, server: McpServer, text: str) -> str:
        """`text` of `server`'s configuration with its `${VAR}`s replaced."""
        try:
            return expand(text, self.env)
        except KeyError as exc:
            raise UserError(
                f'MCP server "{server.name}" needs the environment variable {exc.args[0]}, '
                "which is not set — add it to .env"
            ) from None

    def headers(self, server: McpServer) -> dict[str, str]:
        return {name: self.expand(server, value) for name, value in server.headers.items()}

    @contextmanager
    def redacting(self, name: str) -> Iterator[None]:
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


def _usable(client: OAuthClientInformationFull, redirect_uri: str) -> bool:
    """A registered client still fit for use: this redirect URI, an unexpired secret."""
    uris = [str(uri) for uri in client.redirect_uris or []]
    expires = client.client_secret_expires_at
    return redirect_uri in uris and (not expires or expires > time.time() + 60)
