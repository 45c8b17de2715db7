"""The web console at `/ui/`: the files `make console` builds into `agentctl/server/console/`,
served from memory (each with its ETag and, for clients that take it, gzipped). The page is
public, as it holds no data: everything it shows comes from the API with the visitor's own
credentials. Routes inside the console are in the address's fragment (`/ui/#/threads`), so
the console works behind any path prefix."""

from __future__ import annotations

import contextlib
from importlib import resources
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from agentctl.auth.oidc import OidcAuthenticator
from agentctl.errors import AuthUnavailable, NotFound
from agentctl.server.access import CONSOLE_PREFIX
from agentctl.server.assets import SECURITY_HEADERS, Assets, asset_response, read_assets
from agentctl.server.context import Server, server_of

# Only the console's own files run and load; it talks to its own server only (and to the
# identity provider it signs users in with, when there is one). `data:` images are inline
# icons.
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'{provider}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

router = APIRouter(include_in_schema=False)


# The console's files by name, read once from the installed package.
assets = Assets(lambda: read_assets(resources.files("agentctl.server") / "console"))


async def policy(server: Server | None) -> str:
    """The content security policy of the console's files on `server` (None: the
    platform's root, whose console signs in with the deployment key only)."""
    origins = [] if server is None else await provider_origins(server)
    return POLICY.format(provider="".join(f" {origin}" for origin in origins))


async def provider_origins(server: Server) -> list[str]:
    """Where the console's sign-in through the OIDC provider connects: the issuer (discovery)
    and the token endpoint, which some providers keep on another origin."""
    sign_in = server.browser_sign_in()
    if sign_in is None:
        return []
    origins = [_origin(sign_in["issuer"])]
    authenticator = server.access.authenticator
    if isinstance(authenticator, OidcAuthenticator):
        with contextlib.suppress(AuthUnavailable):  # the page still loads; sign-in will say
            endpoint = await authenticator.token_endpoint()
            if endpoint is not None and _origin(endpoint) not in origins:
                origins.append(_origin(endpoint))
    return origins


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@router.get(CONSOLE_PREFIX)
async def console_root() -> Response:
    # Relative, so it stays right behind a path prefix: /prefix/ui → /prefix/ui/.
    return RedirectResponse("ui/", status_code=308)


@router.api_route(CONSOLE_PREFIX + "/{name}", methods=["GET", "HEAD"])
@router.api_route(CONSOLE_PREFIX + "/", methods=["GET", "HEAD"], name="console_index")
async def console_file(request: Request, name: str = "index.html") -> Response:
    asset = (await assets.loaded()).get(name)
    if asset is None:
        raise NotFound(f"the console has no file {name!r} — open {CONSOLE_PREFIX}/")
    # The platform's root application serves the console too (its overview), for no agent.
    server = server_of(request) if hasattr(request.app.state, "server") else None
    headers = {**SECURITY_HEADERS, "Content-Security-Policy": await policy(server)}
    return asset_response(request, asset, headers)
