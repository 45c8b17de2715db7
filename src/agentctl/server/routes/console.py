"""The web console at `/ui/`: the files `make console` builds into `agentctl/server/console/`,
served from memory (each with its ETag and, for clients that take it, gzipped). The page is
public, as it holds no data: everything it shows comes from the API with the visitor's own
credentials. Routes inside the console are in the address's fragment (`/ui/#/threads`), so
the console works behind any path prefix."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from agentctl.errors import NotFound
from agentctl.server.access import CONSOLE_PREFIX
from agentctl.server.context import Server, server_of

TYPES = {
    "html": "text/html; charset=utf-8",
    "js": "text/javascript; charset=utf-8",
    "css": "text/css; charset=utf-8",
    "svg": "image/svg+xml",
}
# Only the console's own files run and load; it talks to its own server only (and to the
# identity provider it signs users in with, when there is one). `data:` images are inline
# icons.
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'{provider}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",  # revalidated on every load: the ETag makes that cheap
}

router = APIRouter(include_in_schema=False)


@dataclass(frozen=True)
class Asset:
    body: bytes
    gzipped: bytes
    media_type: str
    etag: str


@cache
def assets() -> dict[str, Asset]:
    """The console's files by name, read once from the installed package."""
    found: dict[str, Asset] = {}
    folder = resources.files("agentctl.server") / "console"
    for entry in folder.iterdir():
        media_type = TYPES.get(entry.name.rpartition(".")[2])
        if media_type is None:
            continue
        body = entry.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        found[entry.name] = Asset(body, gzip.compress(body, mtime=0), media_type, etag)
    return found


def policy(server: Server) -> str:
    """The content security policy of the console's files on `server`."""
    sign_in = server.browser_sign_in()
    if sign_in is None:
        return POLICY.format(provider="")
    issuer = urlsplit(sign_in["issuer"])
    return POLICY.format(provider=f" {issuer.scheme}://{issuer.netloc}")


@router.get(CONSOLE_PREFIX)
async def console_root() -> Response:
    # Relative, so it stays right behind a path prefix: /prefix/ui → /prefix/ui/.
    return RedirectResponse("ui/", status_code=308)


@router.get(CONSOLE_PREFIX + "/{name}")
@router.get(CONSOLE_PREFIX + "/", name="console_index")
async def console_file(request: Request, name: str = "index.html") -> Response:
    asset = (await asyncio.to_thread(assets)).get(name)  # read once; files block the loop
    if asset is None:
        raise NotFound(f"the console has no file {name!r} — open {CONSOLE_PREFIX}/")
    headers = {**SECURITY_HEADERS, "ETag": asset.etag, "Vary": "Accept-Encoding"}
    headers["Content-Security-Policy"] = policy(server_of(request))
    if request.headers.get("if-none-match") == asset.etag:
        return Response(status_code=304, headers=headers)
    body = asset.body
    if "gzip" in request.headers.get("accept-encoding", ""):
        body, headers["Content-Encoding"] = asset.gzipped, "gzip"
    return Response(body, media_type=asset.media_type, headers=headers)
