"""Real identity providers on a loopback port, for tests and for running auth offline.

Each is a small Starlette app served on 127.0.0.1 and a free port while the object is entered
(``with IdpAServer() as idp: ...``); `env` holds the variables that point agentctl at it.

- `IdpAServer` answers ``GET /auth/v1/user`` like the idp_a service: opaque session tokens
  from `issue`, `revoke`d at will, a required ``apikey`` header, an `outage` switch (503) and
  a `calls` counter.
- `IdpBServer` serves the idp_b key set at ``GET /v1/jwks`` (only with ``Authorization: Bearer
  <secret key>``) and `mint`s RS256 session tokens with real RSA keys; `rotate` adds a key.
- `OidcIssuer` serves an OpenID Connect discovery document and key set, and `mint`s tokens;
  a public client it knows (`register`) signs users in through its sign-in page by the
  authorization code flow with PKCE (S256), as a browser app does.

`mint` can also make the tokens an attacker would try: expired, not yet valid, signed with
another key, ``alg: none``, or HS256 "signed" with the public key (`public_pem`).

``python -m agentctl.testing.identity [--provider idp_b|idp_a] [--port 8777] [--user NAME]...``
serves one of them until Ctrl-C and prints the ``.env`` lines that point a project's
``[auth]`` at it and a bearer token for each user (alice and bob by default).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import html
import secrets
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import urlencode

from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from agentctl.testing.serving import LoopbackServer, StopSignals
from agentctl.testing.signing import new_rsa_key, public_jwk, public_pem, sign

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["IdpAServer", "IdpBServer", "MintOptions", "OidcIssuer", "new_rsa_key", "sign"]


class _Provider(LoopbackServer):
    """A loopback provider with an `outage` switch: while on, every endpoint answers 503."""

    def __init__(self) -> None:
        super().__init__()
        self.outage = False

    def _down(self) -> JSONResponse | None:
        if self.outage:
            return JSONResponse({"message": "service unavailable"}, status_code=503)
        return None


class IdpAServer(_Provider):
    """The idp_a auth service: ``GET /auth/v1/user`` answers the user of a session token."""

    def __init__(self, publishable_key: str = "pk_loopback_publishable") -> None:
        super().__init__()
        self.publishable_key = publishable_key
        self.users: dict[str, dict[str, Any]] = {}  # user id -> user object
        self.sessions: dict[str, str] = {}  # live token -> user id
        self.calls = 0  # requests to /auth/v1/user, answered or not
        self.delay = 0.0  # seconds to wait before answering

    @property
    def env(self) -> dict[str, str]:
        return {"IDP_A_URL": self.url, "IDP_A_PUBLISHABLE_DEFAULT_KEY": self.publishable_key}

    def add_user(self, user_id: str, **fields: Any) -> dict[str, Any]:
        """Create (or update) a user; `fields` such as ``email`` go into its user object."""
        user = self.users.setdefault(
            user_id,
            {"id": user_id, "aud": "authenticated", "role": "authenticated", "app_metadata": {}},
        )
        user.update(fields)
        return user

    def issue(self, user_id: str) -> str:
        """A new opaque session token of `user_id` (created if unknown)."""
        self.add_user(user_id)
        token = secrets.token_urlsafe(32)
        self.sessions[token] = user_id
        return token

    def revoke(self, token: str) -> None:
        """End a session: the provider no longer accepts its token."""
        self.sessions.pop(token, None)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/auth/v1/user", self._user, methods=["GET"])])

    async def _user(self, request: Request) -> JSONResponse:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        if down := self._down():
            return down
        if request.headers.get("apikey") != self.publishable_key:
            return JSONResponse({"message": "Invalid API key"}, status_code=401)
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        user_id = self.sessions.get(token) if scheme.lower() == "bearer" else None
        if user_id is None or user_id not in self.users:
            body = {"code": 403, "error_code": "bad_jwt", "msg": "invalid JWT"}
            return JSONResponse(body, status_code=403)
        return JSONResponse(self.users[user_id])


class MintOptions(TypedDict, total=False):
    """How `mint` signs a token, beyond its subject: see `IdpBServer.mint`."""

    expires_in: float
    not_before: float | None
    kid: str | None
    alg: str
    key: Any
    extra_claims: Mapping[str, Any] | None


class _JwtIssuer(_Provider):
    """Signing keys, their key set, and `mint`."""

    def __init__(self, key_alg: str | None) -> None:
        super().__init__()
        self.key_alg = key_alg  # the "alg" each published key declares, if any
        self.keys: dict[str, rsa.RSAPrivateKey] = {}  # kid -> key; the last one signs
        self.kid = ""
        self.jwks_fetches = 0
        self.rotate()

    def rotate(self, key: rsa.RSAPrivateKey | None = None) -> str:
        """Add a signing key (new, or `key`), which signs from now on; returns its kid."""
        self.kid = f"key-{len(self.keys) + 1}-{secrets.token_hex(4)}"
        self.keys[self.kid] = key or new_rsa_key()
        return self.kid

    @property
    def public_pem(self) -> bytes:
        """The current signing key's public key, PEM-encoded."""
        return public_pem(self.keys[self.kid])

    def jwks(self) -> dict[str, Any]:
        """The key set as served: every key added so far."""
        return {"keys": [public_jwk(key, kid, self.key_alg) for kid, key in self.keys.items()]}

    def _mint(
        self,
        claims: dict[str, Any],
        *,
        expires_in: float = 300,
        not_before: float | None = None,
        kid: str | None = None,
        alg: str = "RS256",
        key: Any = None,
        extra_claims: Mapping[str, Any] | None = None,
    ) -> str:
        now = int(time.time())
        claims = {
            **claims,
            "iat": now,
            "nbf": now + int(not_before or 0),
            "exp": now + int(expires_in),
        }
        for name, value in (extra_claims or {}).items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        kid = kid or self.kid
        if key is None:  # the named key when the server has it, else the current one
            key = self.keys.get(kid, self.keys[self.kid])
        return sign(claims, kid=kid, alg=alg, key=key)

    async def _jwks(self, request: Request) -> JSONResponse:
        self.jwks_fetches += 1
        return self._down() or JSONResponse(self.jwks())


class IdpBServer(_JwtIssuer):
    """The idp_b session-token service: its key set at ``GET /v1/jwks``, behind the secret key."""

    def __init__(self, secret_key: str = "sk_loopback_secret") -> None:
        super().__init__(key_alg="RS256")
        self.secret_key = secret_key

    @property
    def api_url(self) -> str:
        """What ``IDP_B_API_URL`` is set to: the base of ``/jwks``."""
        return f"{self.url}/v1"

    @property
    def env(self) -> dict[str, str]:
        return {"IDP_B_SECRET_KEY": self.secret_key, "IDP_B_API_URL": self.api_url}

    def mint(self, sub: str, **options: Unpack[MintOptions]) -> str:
        """A session token of `sub`, valid from `not_before` seconds from now (default: now)
        for `expires_in` seconds (default 300; negative: already expired), signed with RS256
        by the key `kid` names (default: the current key). `alg`, `key` and `kid` make other
        tokens: ``alg="none"``, ``alg="HS256", key=public_pem``, a `key` not in the set, a
        made-up `kid`. `extra_claims` are added, and those set to None removed
        (``{"exp": None}``)."""
        claims = {"sub": sub, "iss": self.url, "sid": f"sess_{secrets.token_hex(8)}"}
        return self._mint(claims, **options)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/jwks", self._guarded_jwks, methods=["GET"])])

    async def _guarded_jwks(self, request: Request) -> JSONResponse:
        secret = request.headers.get("authorization") == f"Bearer {self.secret_key}"
        if not secret and not self.outage:
            self.jwks_fetches += 1
            body = {"errors": [{"message": "Invalid authentication", "code": "unauthorized"}]}
            return JSONResponse(body, status_code=401)
        return await self._jwks(request)


class OidcIssuer(_JwtIssuer):
    """An OpenID Connect provider: discovery document, key set and `mint`."""

    def __init__(
        self,
        *,
        audience: str = "agentctl",
        path: str = "",
        signing_algs: list[str] | None = None,
        key_alg: str | None = None,
    ) -> None:
        """`path` is appended to the server's URL to make the issuer (e.g. "/realms/demo");
        `signing_algs` is the discovery's ``id_token_signing_alg_values_supported``
        (default ``["RS256"]``; an empty list leaves the field out); `key_alg` is the
        ``alg`` the published keys declare (default: none, so any RSA algorithm fits)."""
        super().__init__(key_alg)
        self.audience = audience
        self.path = path.rstrip("/")
        self.signing_algs = ["RS256"] if signing_algs is None else signing_algs
        self.discovery_fetches = 0
        self.token_url: str | None = None  # the discovery's token endpoint, if not ours
        self.clients: dict[str, set[str]] = {}  # public client id -> its redirect URIs
        self.codes: dict[str, _Grant] = {}  # authorization code -> what it grants

    @property
    def issuer(self) -> str:
        return f"{self.url}{self.path}"

    def discovery(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "issuer": self.issuer,
            "jwks_uri": f"{self.issuer}/jwks",
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": self.token_url or f"{self.issuer}/token",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
        }
        if self.signing_algs:
            document["id_token_signing_alg_values_supported"] = list(self.signing_algs)
        return document

    def mint(
        self,
        sub: str,
        *,
        audience: str | list[str] | None = None,
        issuer: str | None = None,
        **options: Unpack[MintOptions],
    ) -> str:
        """A token of `sub` for `audience` (default: this issuer's) from `issuer` (default:
        this one); the other arguments are those of `IdpBServer.mint`."""
        claims = {
            "sub": sub,
            "iss": issuer or self.issuer,
            "aud": audience or self.audience,
        }
        return self._mint(claims, **options)

    def register(self, client_id: str, redirect_uri: str) -> None:
        """Let the public client `client_id` sign users in by the authorization code flow
        with PKCE, sending them back to `redirect_uri` (exactly)."""
        self.clients.setdefault(client_id, set()).add(redirect_uri)

    def app(self) -> Starlette:
        routes = [
            Route(f"{self.path}/.well-known/openid-configuration", self._discovery),
            Route(f"{self.path}/jwks", self._jwks),
            Route(f"{self.path}/authorize", self._authorize, methods=["GET", "POST"]),
            Route(f"{self.path}/token", self._token, methods=["POST"]),
        ]
        return Starlette(routes=routes)

    async def _discovery(self, request: Request) -> JSONResponse:
        self.discovery_fetches += 1
        return _cors(self._down() or JSONResponse(self.discovery()))

    async def _authorize(self, request: Request) -> Response:
        """The provider's sign-in page: GET shows a form asking for the user name; POST
        signs that user in and sends the browser back to the client with a code."""
        params = dict(request.query_params)
        if request.method == "POST":
            params.update({k: str(v) for k, v in (await request.form()).items()})
        problem = self._authorize_problem(params)
        if problem is not None:
            return HTMLResponse(f"<p>sign-in refused: {html.escape(problem)}</p>", 400)
        if request.method == "GET" or not params.get("username"):
            hidden = "".join(
                f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                for k, v in params.items()
            )
            return HTMLResponse(
                '<form method="post"><label>User name <input name="username"></label>'
                f'{hidden}<button type="submit">Sign in to the provider</button></form>'
            )
        code = secrets.token_urlsafe(16)
        self.codes[code] = _Grant(
            params["client_id"], params["redirect_uri"], params["code_challenge"],
            params["username"], time.monotonic() + 60,
        )  # fmt: skip
        back = {"code": code, "state": params.get("state", "")}
        return RedirectResponse(f"{params['redirect_uri']}?{urlencode(back)}", 303)

    def _authorize_problem(self, params: Mapping[str, str]) -> str | None:
        if params.get("response_type") != "code":
            return "response_type must be code"
        if params.get("redirect_uri") not in self.clients.get(params.get("client_id", ""), ()):
            return "unknown client or redirect_uri"
        if params.get("code_challenge_method") != "S256" or not params.get("code_challenge"):
            return "PKCE with S256 is required"
        return None

    async def _token(self, request: Request) -> JSONResponse:
        form = {k: str(v) for k, v in (await request.form()).items()}
        grant = self.codes.pop(form.get("code", ""), None)
        verifier = form.get("code_verifier", "").encode()
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
        if (
            form.get("grant_type") != "authorization_code"
            or grant is None
            or grant.expires < time.monotonic()
            or (form.get("client_id"), form.get("redirect_uri")) != (grant.client, grant.redirect)
            or challenge.decode() != grant.challenge
        ):
            return _cors(JSONResponse({"error": "invalid_grant"}, status_code=400))
        tokens = {
            "access_token": self.mint(grant.user),
            "id_token": self.mint(grant.user, audience=grant.client),
            "token_type": "Bearer",
            "expires_in": 300,
        }
        return _cors(JSONResponse(tokens))


@dataclass(frozen=True)
class _Grant:
    """An authorization code's grant, until the client redeems it."""

    client: str
    redirect: str
    challenge: str
    user: str
    expires: float


def _cors(response: JSONResponse) -> JSONResponse:
    """What a provider's public endpoints answer browsers: readable by any page."""
    response.headers["Access-Control-Allow-Origin"] = "*"
    return response


DEFAULT_PORT = 8777
DEFAULT_USERS = ("alice", "bob")


def main(argv: Sequence[str] | None = None) -> int:
    """Serve an identity provider until Ctrl-C or SIGTERM, printing the ``.env`` lines
    and a token per user; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m agentctl.testing.identity",
        description="A local identity provider for trying [auth] offline: prints the .env "
        "lines for the project and a bearer token per user.",
    )
    parser.add_argument(
        "--provider", choices=("idp_b", "idp_a"), default="idp_b", help="[auth] provider (idp_b)"
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port, 0 for any ({DEFAULT_PORT})"
    )
    parser.add_argument(
        "--user", action="append", dest="users", metavar="NAME",
        help="a user to print a token for; repeat it (alice and bob)",
    )  # fmt: skip
    parser.add_argument(
        "--hours", type=float, default=24.0, help="how long idp_b tokens stay valid (24)"
    )
    args = parser.parse_args(argv)
    idp: IdpAServer | IdpBServer = IdpAServer() if args.provider == "idp_a" else IdpBServer()
    try:
        idp.start(args.port)
    except OSError as exc:
        print(
            f"error: cannot listen on 127.0.0.1:{args.port}: {exc} — pass --port", file=sys.stderr
        )
        return 1
    stop = StopSignals()
    try:
        users = args.users or list(DEFAULT_USERS)
        if isinstance(idp, IdpAServer):
            tokens = {user: idp.issue(user) for user in users}
            valid = "while this provider runs"
        else:
            tokens = {user: idp.mint(user, expires_in=args.hours * 3600) for user in users}
            valid = f"for {args.hours:g} h, while this provider runs"
        width = max(len(user) for user in users)
        lines = [
            f"Identity provider {args.provider} listening on {idp.url}",
            f'In agent.toml:  [auth] provider = "{args.provider}"',
            "In the project's .env (or the environment of agentctl dev / serve):",
            *(f"  {name}={value}" for name, value in idp.env.items()),
            f"Bearer tokens (Authorization: Bearer <token>), valid {valid}:",
            *(f"  {user:<{width}}  {token}" for user, token in tokens.items()),
            "Press Ctrl-C to stop.",
        ]
        print("\n".join(lines), flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        idp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
