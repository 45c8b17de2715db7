"""The web console's files at /ui/: public, cached by ETag, gzipped for clients that take
it, under a content security policy that lets the page load only its own files and call
only its own server."""

from __future__ import annotations

import gzip
from pathlib import Path

import httpx

from agentctl.testing.identity import OidcIssuer
from tests.conftest import chat_project
from tests.server.conftest import Running, console_auth, running_server, with_auth


async def test_the_console_is_served_with_its_security_headers(agent: Running) -> None:
    async with httpx.AsyncClient(base_url=agent.url) as http:
        moved = await http.get("/ui")
        assert moved.status_code == 308
        assert moved.headers["location"] == "ui/"  # relative: right behind a path prefix

        page = await http.get("/ui/", headers={"Accept-Encoding": "identity"})
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert '<script type="module" src="console.js">' in page.text
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy
        assert "connect-src 'self';" in policy
        assert "frame-ancestors 'none'" in policy
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["cache-control"] == "no-cache"

        unchanged = {"If-None-Match": page.headers["etag"], "Accept-Encoding": "identity"}
        again = await http.get("/ui/", headers=unchanged)
        assert again.status_code == 304
        assert again.content == b""
        weak = {
            "If-None-Match": f'"other", W/{page.headers["etag"]}',
            "Accept-Encoding": "identity",
        }
        assert (await http.get("/ui/", headers=weak)).status_code == 304
        head = await http.head("/ui/")
        assert head.status_code == 200
        assert head.content == b""
        # The gzipped body is another representation: another tag.
        assert head.headers["etag"] == page.headers["etag"].removesuffix('"') + '-gz"'

        script = await http.get("/ui/console.js", headers={"Accept-Encoding": "gzip"})
        assert script.headers["content-encoding"] == "gzip"
        assert script.headers["content-type"] == "text/javascript; charset=utf-8"
        raw = await http.get("/ui/console.js", headers={"Accept-Encoding": "identity"})
        assert "content-encoding" not in raw.headers
        assert gzip.decompress(await _raw(http, "/ui/console.js")) == raw.content

        missing = await http.get("/ui/secrets.txt")
        assert missing.status_code == 404
        assert missing.json() == {"detail": "the console has no file 'secrets.txt' — open /ui/"}
        for path in ("/ui/%2e%2e/agent.toml", "/ui/..%2fagent.toml", "/ui/%2e%2e%2f.env"):
            assert (await http.get(path)).status_code == 404, path


async def test_info_says_how_the_console_signs_in(agent: Running) -> None:
    async with httpx.AsyncClient(base_url=agent.url) as http:
        info = (await http.get("/info")).json()
    # `agentctl dev` without [auth]: anyone may call; it takes no deploys.
    assert info["credentials"] == {
        "bearer": False,
        "api_key": False,
        "anonymous": True,
        "oidc": None,
    }
    assert info["deploys"] is False


async def _raw(http: httpx.AsyncClient, path: str) -> bytes:
    """The body as sent (httpx decodes gzip when it reads the whole response)."""
    async with http.stream("GET", path, headers={"Accept-Encoding": "gzip"}) as response:
        return b"".join([chunk async for chunk in response.aiter_raw()])


async def test_with_a_console_client_the_provider_is_named_and_reachable(
    tmp_path: Path, oidc: OidcIssuer
) -> None:
    """`[auth] client_id`: /info names the provider and client the console signs in with, and
    the console's policy lets it reach the provider (discovery, token) and nothing else."""
    project = with_auth(chat_project(tmp_path / "source"), tmp_path / "chat", console_auth(oidc))
    async with (
        running_server(project, tmp_path / "data") as running,
        httpx.AsyncClient(base_url=running.url) as http,
    ):
        credentials = (await http.get("/info")).json()["credentials"]
        page = await http.get("/ui/")
    assert credentials == {
        "bearer": True,
        "api_key": False,
        "anonymous": False,
        "oidc": {"issuer": oidc.issuer, "client_id": "agentctl-console"},
    }
    assert f"connect-src 'self' {oidc.url};" in page.headers["content-security-policy"]


async def test_a_token_endpoint_elsewhere_is_allowed_too(tmp_path: Path, oidc: OidcIssuer) -> None:
    """Some providers exchange the code on another origin than the issuer's."""
    oidc.token_url = "https://tokens.example.com/oauth2/token"
    project = with_auth(chat_project(tmp_path / "source"), tmp_path / "chat", console_auth(oidc))
    try:
        async with (
            running_server(project, tmp_path / "data") as running,
            httpx.AsyncClient(base_url=running.url) as http,
        ):
            policy = (await http.get("/ui/")).headers["content-security-policy"]
    finally:
        oidc.token_url = None
    assert f"connect-src 'self' {oidc.url} https://tokens.example.com;" in policy


async def test_only_the_console_s_own_files_are_public(tmp_path: Path, oidc: OidcIssuer) -> None:
    """On a server with `[auth]`: the page and its files need no credentials; no deeper path
    under /ui/ is let through unauthenticated."""
    auth = {"provider": "oidc", "issuer": oidc.issuer, "audience": oidc.audience}
    project = with_auth(chat_project(tmp_path / "source"), tmp_path / "chat", auth)
    async with (
        running_server(project, tmp_path / "data") as running,
        httpx.AsyncClient(base_url=running.url) as http,
    ):
        for path in ("/ui", "/ui/", "/ui/console.js", "/ui/missing.js"):
            assert (await http.get(path)).status_code in (200, 308, 404), path
        for path in ("/ui/deeper/console.js", "/ui/%2e%2e/threads"):
            assert (await http.get(path)).status_code == 401, path
