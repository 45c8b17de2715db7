"""A real OAuth 2.1 authorization server, for tests and for trying user-owned MCP servers offline.

`AuthorizationServer` keeps its clients, codes and tokens in memory and answers, through the
official `mcp` SDK's handlers plus a sign-in page and an introspection endpoint:

- ``GET /.well-known/oauth-authorization-server`` (RFC 8414; the same document at
  ``/.well-known/openid-configuration``);
- ``GET /authorize`` (authorization code, PKCE S256 required, `resource` recorded per RFC 8707)
  which sends the browser to ``GET /sign-in?request=<id>``: a user name and password form, whose
  ``POST`` redirects to the client's `redirect_uri` with `code` and `state` (a wrong password
  shows the form again with an error; "Cancel" answers ``error=access_denied``);
- ``POST /token`` (authorization_code, refresh_token with rotation; client secret by
  ``client_secret_basic`` or ``client_secret_post``, whichever the client registered; a
  `resource` other than the grant's is refused with ``invalid_target``);
- ``POST /register`` (dynamic client registration, RFC 7591, unless turned off),
  ``POST /revoke`` (RFC 7009);
- ``POST /introspect`` (RFC 7662) for the resource server, with HTTP Basic credentials
  `introspection_client`.

Confidential clients can also be pre-registered (`clients`: id -> secret); they may redirect to
any loopback ``http`` URL (an agent's callback on a free port). `outage = True` makes every
endpoint answer 503 until set back.
"""

from __future__ import annotations

import base64
import hmac
import html
import math
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, AnyUrl
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["AuthorizationServer", "PreregisteredClient"]

CODE_SECONDS = 300  # how long an authorization code can be redeemed
SIGN_IN_SECONDS = 600  # how long a sign-in page stays usable
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")


class PreregisteredClient(OAuthClientInformationFull):
    """A confidential client the provider was configured with: any loopback redirect URI."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None:
            raise InvalidRedirectUriError("redirect_uri is required")
        if redirect_uri.scheme != "http" or redirect_uri.host not in LOOPBACK_HOSTS:
            raise InvalidRedirectUriError(
                f"Redirect URI '{redirect_uri}' is not a loopback http URL (127.0.0.1 or localhost)"
            )
        return redirect_uri


class _Access(AccessToken):
    grant: str  # the sign-in this token comes from: revoking one token revokes the grant


class _Refresh(RefreshToken):
    grant: str


@dataclass(frozen=True)
class _Pending:
    """An authorization request waiting on the sign-in page."""

    client: OAuthClientInformationFull
    params: AuthorizationParams
    expires: float


class AuthorizationServer(OAuthAuthorizationServerProvider[AuthorizationCode, _Refresh, _Access]):
    """The provider's state and endpoints; `app(issuer)` is its ASGI app."""

    def __init__(
        self,
        *,
        users: Mapping[str, str],
        scopes: Sequence[str],
        clients: Mapping[str, str] | None = None,
        access_token_seconds: float = 3600,
        refresh_token_seconds: float | None = None,
        default_resource: str | None = None,
        dynamic_registration: bool = True,
        name: str = "Loopback OAuth provider",
    ) -> None:
        """`users`: user name -> password; `scopes`: those clients may ask for; `clients`:
        pre-registered confidential clients, id -> secret; `default_resource`: the resource a
        token is bound to when the client names none; `dynamic_registration`: False for a
        provider without ``/register`` (only pre-registered clients)."""
        self.users = dict(users)
        self.scopes = list(scopes)
        self.access_token_seconds = access_token_seconds
        self.refresh_token_seconds = refresh_token_seconds
        self.default_resource = default_resource
        self.dynamic_registration = dynamic_registration
        self.name = name
        self.outage = False  # while True, every endpoint answers 503
        self.introspection_client = ("resource-server", secrets.token_urlsafe(24))
        self.clients: dict[str, OAuthClientInformationFull] = {
            client_id: PreregisteredClient(
                client_id=client_id,
                client_secret=secret,
                client_id_issued_at=int(time.time()),
                redirect_uris=None,
                token_endpoint_auth_method="client_secret_post",
                scope=" ".join(self.scopes),
                client_name=client_id,
            )
            for client_id, secret in (clients or {}).items()
        }
        self.pending: dict[str, _Pending] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access_tokens: dict[str, _Access] = {}
        self.refresh_tokens: dict[str, _Refresh] = {}
        # counters, for tests
        self.token_requests = 0  # POST /token with grant_type=authorization_code
        self.refresh_requests = 0  # POST /token with grant_type=refresh_token
        self.registrations = 0
        self.revocations = 0
        self.introspections = 0
        self.sign_ins: list[str] = []  # users who signed in, in order
        self._lock = threading.Lock()
        self.issuer = ""

    # -- test hooks -------------------------------------------------------------------------

    def revoke_refresh_tokens(self, user: str) -> int:
        """The provider ends `user`'s grants: their refresh tokens are refused from now on
        (access tokens already issued stay valid until they expire). Returns how many."""
        with self._lock:
            gone = [k for k, token in self.refresh_tokens.items() if token.subject == user]
            for key in gone:
                del self.refresh_tokens[key]
        return len(gone)

    def revoke_access_tokens(self, user: str) -> int:
        """`user`'s access tokens are refused from now on (their refresh tokens still work),
        as when a provider expires tokens early. Returns how many."""
        with self._lock:
            gone = [k for k, token in self.access_tokens.items() if token.subject == user]
            for key in gone:
                del self.access_tokens[key]
        return len(gone)

    def introspect(self, token: str) -> dict[str, Any]:
        """The RFC 7662 answer for `token`."""
        access = self.access_tokens.get(token)
        if access is None or (access.expires_at is not None and access.expires_at <= time.time()):
            return {"active": False}
        answer: dict[str, Any] = {
            "active": True,
            "token_type": "Bearer",
            "client_id": access.client_id,
            "scope": " ".join(access.scopes),
            "sub": access.subject,
            "username": access.subject,
            "exp": access.expires_at,
            "iss": self.issuer,
        }
        if access.resource is not None:
            answer["aud"] = access.resource
        return answer

    # -- OAuthAuthorizationServerProvider ------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None  # the SDK's handler always sets one
        with self._lock:
            self.registrations += 1
            self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        resource = params.resource or self.default_resource
        if params.resource is not None:
            parts = urlsplit(params.resource)
            if not parts.scheme or not parts.netloc or parts.fragment:
                raise AuthorizeError(
                    "invalid_request", "resource must be an absolute URI without a fragment"
                )
        request_id = secrets.token_urlsafe(24)
        params = params.model_copy(update={"resource": resource})
        with self._lock:
            self.pending[request_id] = _Pending(client, params, time.time() + SIGN_IN_SECONDS)
        return f"{self.issuer}/sign-in?{urlencode({'request': request_id})}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        with self._lock:
            if self.codes.pop(authorization_code.code, None) is None:  # single use
                raise TokenError("invalid_grant", "authorization code already used")
            return self._issue(
                client_id=authorization_code.client_id,
                scopes=authorization_code.scopes,
                resource=authorization_code.resource,
                subject=authorization_code.subject or "",
                grant=secrets.token_hex(8),
            )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> _Refresh | None:
        return self.refresh_tokens.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: _Refresh, scopes: list[str]
    ) -> OAuthToken:
        with self._lock:
            if self.refresh_tokens.pop(refresh_token.token, None) is None:  # rotation: once only
                raise TokenError("invalid_grant", "refresh token already used or revoked")
            return self._issue(
                client_id=refresh_token.client_id,
                scopes=scopes,
                resource=refresh_token.resource,
                subject=refresh_token.subject or "",
                grant=refresh_token.grant,
            )

    async def load_access_token(self, token: str) -> _Access | None:
        return self.access_tokens.get(token)

    async def revoke_token(self, token: _Access | _Refresh) -> None:
        with self._lock:
            self.revocations += 1
            for tokens in (self.access_tokens, self.refresh_tokens):
                for key in [k for k, t in tokens.items() if t.grant == token.grant]:
                    del tokens[key]

    def _issue(
        self, *, client_id: str, scopes: list[str], resource: str | None, subject: str, grant: str
    ) -> OAuthToken:
        now = time.time()
        access = _Access(
            token=f"at_{secrets.token_urlsafe(32)}",
            client_id=client_id,
            scopes=scopes,
            expires_at=math.ceil(now + self.access_token_seconds),  # never before expires_in
            resource=resource,
            subject=subject,
            grant=grant,
        )
        refresh = _Refresh(
            token=f"rt_{secrets.token_urlsafe(32)}",
            client_id=client_id,
            scopes=scopes,
            expires_at=None
            if self.refresh_token_seconds is None
            else math.ceil(now + self.refresh_token_seconds),
            resource=resource,
            subject=subject,
            grant=grant,
        )
        self.access_tokens[access.token] = access
        self.refresh_tokens[refresh.token] = refresh
        return OAuthToken(
            access_token=access.token,
            expires_in=max(1, round(self.access_token_seconds)),
            scope=" ".join(scopes),
            refresh_token=refresh.token,
        )

    # -- HTTP -------------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The RFC 8414 document."""
        document = build_metadata(
            AnyHttpUrl(self.issuer),
            None,
            ClientRegistrationOptions(enabled=self.dynamic_registration),
            RevocationOptions(enabled=True),
        ).model_dump(mode="json", exclude_none=True)
        document.update(
            issuer=self.issuer,  # exactly, without the trailing slash pydantic adds
            scopes_supported=self.scopes,
            introspection_endpoint=f"{self.issuer}/introspect",
            introspection_endpoint_auth_methods_supported=["client_secret_basic"],
        )
        return document

    def app(self, issuer: str) -> Starlette:
        """The ASGI app, serving as `issuer` (its base URL, no trailing slash)."""
        self.issuer = issuer.rstrip("/")
        authenticator = _ClientAuthenticator(self)
        registration = ClientRegistrationOptions(
            enabled=True, valid_scopes=self.scopes, default_scopes=self.scopes
        )
        token = TokenHandler(self, authenticator).handle
        revoke = RevocationHandler(self, authenticator).handle
        register = RegistrationHandler(self, registration).handle

        async def metadata(request: Request) -> Response:
            return _cors(JSONResponse(self.metadata()))

        async def token_endpoint(request: Request) -> Response:
            request = await _with_client_id(request)
            form = await request.form()
            with self._lock:
                if form.get("grant_type") == "refresh_token":
                    self.refresh_requests += 1
                else:
                    self.token_requests += 1
            if (problem := self._other_resource(form)) is not None:
                body = {"error": "invalid_target", "error_description": problem}
                return _cors(JSONResponse(body, 400, headers={"Cache-Control": "no-store"}))
            return _cors(await token(request))

        async def revoke_endpoint(request: Request) -> Response:
            return _cors(await revoke(await _with_client_id(request)))

        async def register_endpoint(request: Request) -> Response:
            return _cors(await register(request))

        routes = [
            Route("/.well-known/oauth-authorization-server", metadata, methods=["GET"]),
            Route("/.well-known/openid-configuration", metadata, methods=["GET"]),
            Route("/authorize", AuthorizationHandler(self).handle, methods=["GET", "POST"]),
            Route("/sign-in", self._sign_in, methods=["GET", "POST"]),
            Route("/token", token_endpoint, methods=["POST"]),
            Route("/revoke", revoke_endpoint, methods=["POST"]),
            Route("/introspect", self._introspect, methods=["POST"]),
        ]
        if self.dynamic_registration:
            routes.append(Route("/register", register_endpoint, methods=["POST"]))
        return Starlette(routes=routes, middleware=[Middleware(_OutageMiddleware, server=self)])

    def _other_resource(self, form: FormData) -> str | None:
        """Why a token request's `resource` (RFC 8707) is not the one its grant is bound to."""
        resource = form.get("resource")
        if not isinstance(resource, str) or not resource:
            return None
        grant: AuthorizationCode | _Refresh | None
        if form.get("grant_type") == "refresh_token":
            grant = self.refresh_tokens.get(str(form.get("refresh_token", "")))
        else:
            grant = self.codes.get(str(form.get("code", "")))
        if grant is None or grant.resource is None:
            return None  # the SDK's handler refuses an unknown grant
        if resource.rstrip("/") != grant.resource.rstrip("/"):
            return f"the grant is for {grant.resource}, not {resource}"
        return None

    async def _introspect(self, request: Request) -> JSONResponse:
        client_id, secret = _basic_credentials(request) or ("", "")
        expected_id, expected_secret = self.introspection_client
        if not (
            hmac.compare_digest(client_id, expected_id)
            and hmac.compare_digest(secret.encode(), expected_secret.encode())
        ):
            body = {"error": "invalid_client", "error_description": "HTTP Basic credentials"}
            return JSONResponse(body, 401, headers={"WWW-Authenticate": 'Basic realm="introspect"'})
        with self._lock:
            self.introspections += 1
        token = (await request.form()).get("token")
        return JSONResponse(self.introspect(token if isinstance(token, str) else ""))

    async def _sign_in(self, request: Request) -> Response:
        """The sign-in page: GET shows the form; POST checks the password and sends the browser
        back to the client with a code (or shows the form again with an error)."""
        fields: dict[str, str] = dict(request.query_params)
        if request.method == "POST":
            fields.update({k: v for k, v in (await request.form()).items() if isinstance(v, str)})
        request_id = fields.get("request", "")
        pending = self.pending.get(request_id)
        if pending is None or pending.expires < time.time():
            return _page(
                "Sign-in request unknown or expired",
                "<p>This sign-in link is unknown or has expired: start again from the app.</p>",
                400,
            )
        if request.method == "GET":
            return self._form(request_id, pending, fields.get("username", ""), None)
        params = pending.params
        if fields.get("action") == "cancel":
            self.pending.pop(request_id, None)
            back = construct_redirect_uri(
                str(params.redirect_uri), error="access_denied", state=params.state
            )
            return RedirectResponse(back, 303)
        user, password = fields.get("username", ""), fields.get("password", "")
        expected = self.users.get(user)
        if expected is None or not hmac.compare_digest(password.encode(), expected.encode()):
            return self._form(request_id, pending, user, "Wrong user name or password.")
        code = AuthorizationCode(
            code=secrets.token_urlsafe(32),
            scopes=params.scopes or (pending.client.scope or "").split(),
            expires_at=time.time() + CODE_SECONDS,
            client_id=pending.client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=user,
        )
        with self._lock:
            if self.pending.pop(request_id, None) is None:
                return _page("Already signed in", "<p>This sign-in was already used.</p>", 400)
            self.codes[code.code] = code
            self.sign_ins.append(user)
        back = construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)
        return RedirectResponse(back, 303)

    def _form(
        self, request_id: str, pending: _Pending, user: str, error: str | None
    ) -> HTMLResponse:
        client = pending.client.client_name or pending.client.client_id or "an application"
        scopes = " ".join(pending.params.scopes or (pending.client.scope or "").split())
        what = html.escape(pending.params.resource or "your account")
        problem = f'<p class="error" role="alert">{html.escape(error)}</p>' if error else ""
        body = (
            f"<p><b>{html.escape(client)}</b> asks to use {what}"
            f"{f' (scopes: {html.escape(scopes)})' if scopes else ''}.</p>{problem}"
            '<form method="post" action="sign-in">'
            f'<input type="hidden" name="request" value="{html.escape(request_id)}">'
            '<label>User name <input name="username" autocomplete="username" '
            f'value="{html.escape(user)}" required></label> '
            '<label>Password <input type="password" name="password" '
            'autocomplete="current-password" required></label> '
            '<button type="submit" name="action" value="sign-in">Sign in</button> '
            '<button type="submit" name="action" value="cancel" formnovalidate>Cancel</button>'
            "</form>"
        )
        return _page(f"Sign in to {self.name}", body, 200)


class _OutageMiddleware:
    """While `server.outage` is on, every request gets 503."""

    def __init__(self, app: ASGIApp, server: AuthorizationServer) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.server.outage:
            body = {"error": "temporarily_unavailable", "error_description": "provider outage"}
            await JSONResponse(body, 503)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class _ClientAuthenticator(ClientAuthenticator):
    """The SDK's client authentication, taking the secret from HTTP Basic or the form whatever
    the client registered (RFC 6749 2.3.1 asks servers to accept Basic)."""

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        client_id = form.get("client_id")
        client = await self.provider.get_client(client_id) if isinstance(client_id, str) else None
        if client is None:
            raise AuthenticationError("Invalid client_id")
        if not client.client_secret:
            return client
        basic = _basic_credentials(request)
        given = basic[1] if basic and basic[0] == client_id else form.get("client_secret")
        if not isinstance(given, str) or not hmac.compare_digest(
            given.encode(), client.client_secret.encode()
        ):
            raise AuthenticationError("Invalid client_secret")
        if client.client_secret_expires_at and client.client_secret_expires_at < time.time():
            raise AuthenticationError("Client secret has expired")
        return client


def _basic_credentials(request: Request) -> tuple[str, str] | None:
    scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        client_id, sep, secret = base64.b64decode(encoded, validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return (unquote(client_id), unquote(secret)) if sep else None


async def _with_client_id(request: Request) -> Request:
    """`request`, with the Basic credentials' client id added to its form when the form has none
    (the SDK's handlers read it from the form only)."""
    body = await request.body()
    basic = _basic_credentials(request)
    form = parse_qsl(body.decode("latin-1"), keep_blank_values=True)
    if basic is None or any(name == "client_id" for name, _ in form):
        return request
    body = urlencode([*form, ("client_id", basic[0])]).encode()
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return Request(request.scope, receive)


def _cors(response: Response) -> Response:
    """Endpoints a browser app may call directly: readable by any page."""
    response.headers["Access-Control-Allow-Origin"] = "*"
    return response


def _page(title: str, body: str, status: int) -> HTMLResponse:
    return HTMLResponse(
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}'
        f"</title></head><body><h1>{html.escape(title)}</h1>{body}</body></html>",
        status,
        headers={"Cache-Control": "no-store"},
    )
