"""Static files served from memory: read once from an installed package, each with its
ETag and, for clients that take it, gzipped (the web console's, the API docs')."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from importlib.resources.abc import Traversable

from starlette.requests import Request
from starlette.responses import Response

TYPES = {
    "html": "text/html; charset=utf-8",
    "js": "text/javascript; charset=utf-8",
    "css": "text/css; charset=utf-8",
    "svg": "image/svg+xml",
    "png": "image/png",
}
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",  # revalidated on every load: the ETag makes that cheap
}


@dataclass(frozen=True)
class Asset:
    body: bytes
    gzipped: bytes
    media_type: str
    digest: str  # of the body: the ETag, with `-gz` for the gzipped body


def read_assets(folder: Traversable, names: Collection[str] | None = None) -> dict[str, Asset]:
    """The files of `folder` (only `names`, when given) of a type in `TYPES`, by name."""
    found: dict[str, Asset] = {}
    for entry in folder.iterdir():
        media_type = TYPES.get(entry.name.rpartition(".")[2])
        if media_type is None or (names is not None and entry.name not in names):
            continue
        body = entry.read_bytes()
        digest = hashlib.sha256(body).hexdigest()[:32]
        found[entry.name] = Asset(body, gzip.compress(body, mtime=0), media_type, digest)
    return found


class Assets:
    """Files read by `read` once, the first time they are asked for."""

    def __init__(self, read: Callable[[], dict[str, Asset]]) -> None:
        self._read = read
        self._files: dict[str, Asset] | None = None

    def __call__(self) -> dict[str, Asset]:
        if self._files is None:
            self._files = self._read()
        return self._files

    async def loaded(self) -> dict[str, Asset]:
        """The files, read off the event loop the first time (reading files blocks)."""
        if self._files is None:
            self._files = await asyncio.to_thread(self._read)
        return self._files


def asset_response(request: Request, asset: Asset, headers: dict[str, str]) -> Response:
    """`asset` with `headers`, gzipped when the client takes it, or 304 when the client's
    copy (`If-None-Match`) is still it."""
    gzipped = "gzip" in request.headers.get("accept-encoding", "")
    etag = f'"{asset.digest}-gz"' if gzipped else f'"{asset.digest}"'
    headers = {**headers, "ETag": etag, "Vary": "Accept-Encoding"}
    if etag in _entity_tags(request.headers.get("if-none-match", "")):
        return Response(status_code=304, headers=headers)
    if gzipped:
        headers["Content-Encoding"] = "gzip"
    return Response(asset.gzipped if gzipped else asset.body, media_type=asset.media_type,
                    headers=headers)  # fmt: skip


def _entity_tags(header: str) -> set[str]:
    """The tags of an `If-None-Match` header, weak ones (`W/"…"`) compared as strong."""
    return {tag.strip().removeprefix("W/") for tag in header.split(",")} - {""}
