"""An OAuth provider and the MCP server it protects, on loopback ports: for tests of user-owned
MCP servers and for trying them offline.

``async with running_oauth_provider() as provider:`` (or ``with OAuthProvider() as provider:``)
serves, each on 127.0.0.1 and a free port, in background threads:

- the authorization server (`agentctl.testing.oauth_server`) at `provider.issuer`: metadata,
  sign-in page, dynamic registration, PKCE, resource indicators, refresh token rotation,
  revocation and introspection;
- the notes MCP server (`agentctl.testing.oauth_resource`) at `provider.mcp_url`: tools
  `whoami`, `my_notes`, `add_note`, acting as the user who signed in.

`sign_in(client, authorization_url, user)` goes through the sign-in page as a browser does and
returns where it sends the browser back (the client's redirect URI with `code` and `state`).

``python -m agentctl.testing.oauth_provider [--port 8780] [--mcp-port 8781]
[--users alice:pw,bob:pw] [--client ID:SECRET] [--access-token-seconds N]`` serves both until
Ctrl-C and prints their URLs, the users and an mcp.json entry.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import ExitStack, asynccontextmanager
from html.parser import HTMLParser
from typing import Self
from urllib.parse import urljoin, urlsplit

import httpx
from starlette.applications import Starlette

from agentctl.testing.oauth_resource import IntrospectionVerifier, notes_app
from agentctl.testing.oauth_server import AuthorizationServer
from agentctl.testing.serving import Startable, StopSignals, serve_built

__all__ = [
    "DEFAULT_NOTES",
    "DEFAULT_SCOPES",
    "DEFAULT_USERS",
    "OAuthProvider",
    "SignInError",
    "running_oauth_provider",
    "sign_in",
]

DEFAULT_USERS = {"alice": "alice-password", "bob": "bob-password", "carol": "carol-password"}
DEFAULT_NOTES = {
    "alice": ["Buy oat milk", "Call the dentist on Tuesday"],
    "bob": ["Water the ficus"],
}
DEFAULT_SCOPES = ("notes.read", "notes.write")
DEFAULT_PORT = 8780


class SignInError(Exception):
    """The sign-in page did not send the browser back: `page` is the HTML it showed."""

    def __init__(self, message: str, page: str) -> None:
        super().__init__(message)
        self.page = page


class OAuthProvider(Startable):
    """The authorization server and the notes MCP server, served while entered."""

    def __init__(
        self,
        *,
        users: Mapping[str, str] | None = None,
        notes: Mapping[str, Sequence[str]] | None = None,
        clients: Mapping[str, str] | None = None,
        scopes: Sequence[str] = DEFAULT_SCOPES,
        required_scopes: Sequence[str] = ("notes.read",),
        access_token_seconds: float = 3600,
        refresh_token_seconds: float | None = None,
        dynamic_registration: bool = True,
    ) -> None:
        """`users`: name -> password (default alice, bob and carol, password
        ``<name>-password``); `notes`: each user's notes at the start (default: two of
        alice's, one of bob's); `clients`: pre-registered confidential clients, id -> secret;
        `scopes`: those offered; `required_scopes`: those the MCP server requires of a token;
        `refresh_token_seconds`: None for refresh tokens that never expire;
        `dynamic_registration`: False for a provider that knows only the `clients`."""
        self.auth = AuthorizationServer(
            users=DEFAULT_USERS if users is None else users,
            scopes=scopes,
            clients=clients,
            access_token_seconds=access_token_seconds,
            refresh_token_seconds=refresh_token_seconds,
            dynamic_registration=dynamic_registration,
        )
        self.notes: dict[str, list[str]] = {
            user: list(items) for user, items in (DEFAULT_NOTES if notes is None else notes).items()
        }
        self.required_scopes = list(required_scopes)
        self.issuer = ""
        self.mcp_url = ""
        self._stack: ExitStack | None = None

    # -- serving ----------------------------------------------------------------------------

    def start(self, port: int = 0, mcp_port: int = 0) -> Self:
        """Serve the authorization server on `port` and the MCP server on `mcp_port` (0: free
        ones); raises OSError when one is taken."""
        if self._stack is not None:
            return self
        with ExitStack() as stack:
            stack.enter_context(serve_built(lambda bound: self.auth.app(_base(bound)), port))
            self.issuer = self.auth.issuer
            stack.enter_context(serve_built(self._mcp_app, mcp_port))
            self._stack = stack.pop_all()
        return self

    def stop(self) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None

    def _mcp_app(self, port: int) -> Starlette:
        self.mcp_url = f"{_base(port)}/mcp"
        self.auth.default_resource = self.mcp_url
        verifier = IntrospectionVerifier(
            f"{self.issuer}/introspect", self.auth.introspection_client
        )
        return notes_app(
            mcp_url=self.mcp_url,
            issuer=self.issuer,
            verifier=verifier,
            notes=self.notes,
            scopes=list(self.auth.scopes),
            required_scopes=self.required_scopes,
        )

    @property
    def metadata_url(self) -> str:
        """The authorization server's RFC 8414 metadata."""
        return f"{self.issuer}/.well-known/oauth-authorization-server"

    @property
    def resource_metadata_url(self) -> str:
        """The MCP server's RFC 9728 protected resource metadata."""
        parts = urlsplit(self.mcp_url)
        return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"

    # -- test hooks -------------------------------------------------------------------------

    @property
    def token_requests(self) -> int:
        """Token requests with ``grant_type=authorization_code`` (answered or refused)."""
        return self.auth.token_requests

    @property
    def refresh_requests(self) -> int:
        """Token requests with ``grant_type=refresh_token`` (answered or refused)."""
        return self.auth.refresh_requests

    @property
    def outage(self) -> bool:
        """While True, the authorization server answers every request with 503."""
        return self.auth.outage

    @outage.setter
    def outage(self, down: bool) -> None:
        self.auth.outage = down

    def revoke_refresh_tokens(self, user: str) -> int:
        """The provider ends `user`'s grants: their refresh tokens are refused from now on."""
        return self.auth.revoke_refresh_tokens(user)

    def revoke_access_tokens(self, user: str) -> int:
        """`user`'s access tokens are refused from now on (the MCP server answers 401)."""
        return self.auth.revoke_access_tokens(user)

    async def sign_in(
        self,
        client: httpx.AsyncClient,
        authorization_url: str,
        user: str,
        password: str | None = None,
    ) -> str:
        """`sign_in` as `user`, with their configured password unless `password` is given."""
        secret = self.auth.users.get(user, "") if password is None else password
        return await sign_in(client, authorization_url, user, secret)


@asynccontextmanager
async def running_oauth_provider(
    *,
    users: Mapping[str, str] | None = None,
    notes: Mapping[str, Sequence[str]] | None = None,
    clients: Mapping[str, str] | None = None,
    scopes: Sequence[str] = DEFAULT_SCOPES,
    required_scopes: Sequence[str] = ("notes.read",),
    access_token_seconds: float = 3600,
    refresh_token_seconds: float | None = None,
    dynamic_registration: bool = True,
) -> AsyncIterator[OAuthProvider]:
    """An `OAuthProvider` (same arguments) serving on free ports for the block."""
    provider = OAuthProvider(
        users=users,
        notes=notes,
        clients=clients,
        scopes=scopes,
        required_scopes=required_scopes,
        access_token_seconds=access_token_seconds,
        refresh_token_seconds=refresh_token_seconds,
        dynamic_registration=dynamic_registration,
    )
    with provider:
        yield provider


async def sign_in(
    client: httpx.AsyncClient, authorization_url: str, user: str, password: str
) -> str:
    """Open `authorization_url` (the provider's /authorize with the client's query), fill in
    the sign-in form and submit it, as a browser does; return the URL the provider sends the
    browser back to (the client's redirect URI with `code` and `state`, or `error`). Raises
    `SignInError` when the page shows the form again (wrong password) or an error page."""
    url = authorization_url
    origin = _origin(url)
    for _ in range(5):  # the provider's own redirects, up to its sign-in page
        response = await client.get(url)
        if not response.is_redirect:
            break
        url = urljoin(url, response.headers["location"])
        if _origin(url) != origin:  # back to the client already (an error)
            return url
    page = response.text
    if response.status_code != 200:
        raise SignInError(f"the provider answered {response.status_code}", page)
    form = _Form.parse(page)
    fields = {**form.fields, "username": user, "password": password, "action": "sign-in"}
    response = await client.post(urljoin(url, form.action), data=fields)
    if not response.is_redirect:
        raise SignInError(_error_text(response.text) or "the sign-in was refused", response.text)
    return urljoin(str(response.url), response.headers["location"])


class _Form(HTMLParser):
    """The first form of a page: its action and hidden fields."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str = ""
        self.fields: dict[str, str] = {}
        self._seen = False

    @classmethod
    def parse(cls, page: str) -> _Form:
        form = cls()
        form.feed(page)
        if not form._seen:
            raise SignInError("the provider's page has no sign-in form", page)
        return form

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form" and not self._seen:
            self._seen = True
            self.action = values.get("action", "")
        elif tag == "input" and values.get("type") == "hidden" and "name" in values:
            self.fields[values["name"]] = values.get("value", "")


def _error_text(page: str) -> str:
    start = page.find('role="alert">')
    if start < 0:
        return ""
    start += len('role="alert">')
    return page[start : page.find("<", start)]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _base(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def _users(text: str) -> dict[str, str]:
    users: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, password = item.partition(":")
        if not sep or not name or not password:
            raise argparse.ArgumentTypeError(f"{item!r}: write NAME:PASSWORD")
        users[name] = password
    return users


def _client(text: str) -> tuple[str, str]:
    client_id, sep, secret = text.partition(":")
    if not sep or not client_id or not secret:
        raise argparse.ArgumentTypeError(f"{text!r}: write CLIENT_ID:CLIENT_SECRET")
    return client_id, secret


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the provider and its MCP server until Ctrl-C or SIGTERM; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m agentctl.testing.oauth_provider",
        description="A local OAuth provider and the notes MCP server it protects, for trying "
        "user-owned MCP servers offline.",
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT,
        help=f"authorization server port, 0 for any ({DEFAULT_PORT})",
    )  # fmt: skip
    parser.add_argument(
        "--mcp-port", type=int, default=None, help="MCP server port (the next one; 0 for any)"
    )
    parser.add_argument(
        "--users", type=_users, default=DEFAULT_USERS, metavar="NAME:PASSWORD,...",
        help="users who can sign in (alice, bob and carol, password <name>-password)",
    )  # fmt: skip
    parser.add_argument(
        "--client", type=_client, default=("agentctl", "agentctl-secret"),
        metavar="ID:SECRET", help="a pre-registered confidential client (agentctl:agentctl-secret)",
    )  # fmt: skip
    parser.add_argument(
        "--access-token-seconds", type=float, default=3600.0,
        help="how long access tokens stay valid (3600)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    mcp_port = args.mcp_port if args.mcp_port is not None else (args.port + 1 if args.port else 0)
    client_id, client_secret = args.client
    provider = OAuthProvider(
        users=args.users,
        clients={client_id: client_secret},
        access_token_seconds=args.access_token_seconds,
    )
    try:
        provider.start(args.port, mcp_port)
    except OSError as exc:
        print(
            f"error: cannot listen on 127.0.0.1:{args.port} and {mcp_port}: {exc} — pass --port"
            " and --mcp-port",
            file=sys.stderr,
        )
        return 1
    stop = StopSignals()
    try:
        entry = {
            "mcpServers": {
                "notes": {
                    "url": provider.mcp_url,
                    "description": "Your notes in the loopback notes service",
                    "oauth": {"scopes": list(provider.auth.scopes)},
                }
            }
        }
        width = max(len(user) for user in args.users)
        lines = [
            f"OAuth authorization server: {provider.issuer}",
            f"  metadata: {provider.metadata_url}",
            f"MCP server (tools whoami, my_notes, add_note): {provider.mcp_url}",
            f"  protected resource metadata: {provider.resource_metadata_url}",
            "Users (name, password):",
            *(f"  {user:<{width}}  {password}" for user, password in args.users.items()),
            f"Pre-registered client: client_id={client_id} client_secret={client_secret}"
            " (or let the client register itself)",
            "In mcp.json:",
            *(f"  {line}" for line in json.dumps(entry, indent=2).splitlines()),
            "Press Ctrl-C to stop.",
        ]
        print("\n".join(lines), flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        provider.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
