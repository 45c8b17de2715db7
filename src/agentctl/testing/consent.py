"""A user answering a consent request as the console's page does, for tests and benchmarks,
with a browser played by an httpx client that keeps its cookies: the request's link
(`<base>/ui/#/connect/<flow id>`) names the flow; signed in as its user,
`POST /connections/flows/{id}/redirect` gives the provider's address and the binding cookie;
then the provider's sign-in page (`OAuthProvider.sign_in`), and back to the agent's
callback."""

from __future__ import annotations

import httpx

from agentctl.testing.oauth_provider import OAuthProvider

CONSOLE_PAGE = "/ui/#/connect/"


def link_parts(authorization_url: str) -> tuple[str, str]:
    """The agent's base URL and the flow id of a consent request's link."""
    base, found, flow_id = authorization_url.partition(CONSOLE_PAGE)
    assert found, f"not a consent link of the console: {authorization_url}"
    assert flow_id, f"a consent link without a flow: {authorization_url}"
    return base, flow_id


async def to_provider(browser: httpx.AsyncClient, authorization_url: str, token: str) -> str:
    """The provider's authorization URL, asked as the user of `token` (the console's
    Continue); the browser keeps the binding cookie."""
    base, flow_id = link_parts(authorization_url)
    sent = await browser.post(
        f"{base}/connections/flows/{flow_id}/redirect",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert sent.status_code == 200, sent.text
    url: str = sent.json()["redirect_url"]
    return url


async def signed_in(
    browser: httpx.AsyncClient,
    authorization_url: str,
    token: str,
    provider: OAuthProvider,
    user: str,
) -> str:
    """Continue as the user of `token`, then sign in at the provider as `user`: the callback
    URL the provider sends the browser back to (not opened yet)."""
    base, _ = link_parts(authorization_url)
    back = await provider.sign_in(
        browser, await to_provider(browser, authorization_url, token), user
    )
    assert back.startswith(f"{base}/connections/callback?"), back
    return back


async def consent(
    browser: httpx.AsyncClient,
    authorization_url: str,
    token: str,
    provider: OAuthProvider,
    user: str,
) -> httpx.Response:
    """The whole consent of `authorization_url`'s flow: the callback's page."""
    back = await signed_in(browser, authorization_url, token, provider, user)
    # The provider's redirect: a top-level navigation from another site.
    return await browser.get(back, headers={"Sec-Fetch-Site": "cross-site"})
