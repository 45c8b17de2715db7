"""The interactive API reference at `/docs`: Swagger UI over `/openapi.json`, every file
served by the server itself (Swagger UI's from the pinned `fastapi-offline` package), none
from a CDN, under a content security policy that lets the page load only those files and
call only this server. Public, as it holds no data: "Try it out" sends the visitor's own
credentials."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, Request
from starlette.responses import Response

from agentctl.errors import NotFound
from agentctl.server.access import DOCS_PREFIX
from agentctl.server.assets import SECURITY_HEADERS, Asset, Assets, asset_response, read_assets

# The files of Swagger UI's distribution the page loads (fastapi-offline ships them).
SWAGGER_FILES = frozenset({"swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"})
# `data:` images are Swagger UI's inline icons.
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {**SECURITY_HEADERS, "Content-Security-Policy": POLICY}

router = APIRouter(include_in_schema=False)


def _read() -> dict[str, Asset]:
    found = read_assets(resources.files("fastapi_offline") / "static", SWAGGER_FILES)
    found.update(read_assets(resources.files("agentctl.server") / "docs"))
    return found


# The page, its script and Swagger UI's files, by name, read once.
assets = Assets(_read)


@router.api_route(DOCS_PREFIX, methods=["GET", "HEAD"])
async def docs_page(request: Request) -> Response:
    return asset_response(request, (await assets.loaded())["index.html"], HEADERS)


@router.api_route(DOCS_PREFIX + "/{name}", methods=["GET", "HEAD"])
async def docs_file(request: Request, name: str) -> Response:
    asset = (await assets.loaded()).get(name)
    if asset is None or name == "index.html":
        raise NotFound(f"the API reference has no file {name!r} — open {DOCS_PREFIX}")
    return asset_response(request, asset, HEADERS)
