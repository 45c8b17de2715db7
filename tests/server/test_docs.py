"""The API reference at /docs: every file it loads is the server's own (Swagger UI's from
the installed package, none from a CDN), under a strict content security policy. In a real
browser: tests/console/test_docs.py."""

from __future__ import annotations

import re

import httpx

from tests.server.conftest import Running

POLICY = {
    "default-src": ["'none'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "connect-src": ["'self'"],
    "base-uri": ["'none'"],
    "form-action": ["'none'"],
    "frame-ancestors": ["'none'"],
}


def directives(policy: str) -> dict[str, list[str]]:
    parsed = (part.split() for part in policy.split(";") if part.strip())
    return {name: values for name, *values in parsed}


async def test_the_api_reference_loads_only_the_servers_own_files(agent: Running) -> None:
    async with httpx.AsyncClient(base_url=agent.url) as http:
        page = await http.get("/docs")
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert directives(page.headers["content-security-policy"]) == POLICY
        assert page.headers["x-content-type-options"] == "nosniff"
        loaded = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        # Relative, so they stay right behind a path prefix (/agents/<name>/docs).
        assert sorted(loaded) == [
            "docs/docs.js", "docs/favicon.png", "docs/swagger-ui-bundle.js",
            "docs/swagger-ui.css"]  # fmt: skip
        assert "<script>" not in page.text  # no inline script: the policy would refuse it
        for path in loaded:
            answer = await http.get(f"/{path}")
            assert answer.status_code == 200, path
            assert directives(answer.headers["content-security-policy"]) == POLICY
        script = (await http.get("/docs/docs.js")).text
        assert "://" not in script  # the document beside the page, no other server
        assert "validatorUrl: null" in script  # no badge fetched from validator.swagger.io
        assert "SwaggerUIBundle" in (await http.get("/docs/swagger-ui-bundle.js")).text

        again = await http.get("/docs", headers={"If-None-Match": page.headers["etag"]})
        assert again.status_code == 304
        for path in ("/docs/index.html", "/docs/redoc.standalone.js", "/docs/%2e%2e/agent.toml"):
            missing = await http.get(path)
            assert missing.status_code == 404, path
        assert "has no file" in (await http.get("/docs/nothing.js")).json()["detail"]
