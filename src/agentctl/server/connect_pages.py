"""The HTML pages a user's browser sees while connecting an MCP server: the consent page
(Continue or not), the result of the provider's callback, and every refusal. Plain,
self-contained HTML (no script, no outside resource), every value escaped; no page may be
framed, cached or send its address on (it may carry a flow id)."""

from __future__ import annotations

from html import escape

from starlette.responses import HTMLResponse

HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https: http:; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
}
STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:34rem;margin:4rem auto;padding:0 1rem;"
    "color:#1f2328}h1{font-size:1.4rem}p{line-height:1.5}.muted{color:#59636e}"
    "button{font-size:1rem;padding:.5rem 1.2rem;border-radius:6px;border:1px solid #1f883d;"
    "background:#1f883d;color:#fff;cursor:pointer}"
)


def page(title: str, paragraphs: list[str], status: int = 200, form: str = "") -> HTMLResponse:
    """A page of `paragraphs` (HTML already escaped by the caller: use `text`)."""
    body = "".join(f"<p>{part}</p>" for part in paragraphs)
    html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{body}{form}</body></html>"
    )
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def text(value: object) -> str:
    return escape(str(value))


def refused(status: int, reason: str) -> HTMLResponse:
    """A refusal (or a failure): what is wrong and what to do, never more."""
    return page("Could not connect", [text(reason)], status)


def consent(server: str, description: str | None, user: str, agent: str) -> HTMLResponse:
    """ "Connect <server> for <user> on <agent>?" with a Continue button, which posts the
    form to this very page."""
    purpose = f" ({text(description)})" if description else ""
    paragraphs = [
        f"The agent <b>{text(agent)}</b> asks to use <b>{text(server)}</b>{purpose} as "
        f"<b>{text(user)}</b>, with the account you sign in with next.",
        '<span class="muted">Continue only if you asked the agent for this yourself: whoever '
        "started this request will act with that account.</span>",
    ]
    form = '<form method="post"><button type="submit">Continue</button></form>'
    return page(f"Connect {server} for {user}?", paragraphs, form=form)


def connected(server: str, resumed: bool) -> HTMLResponse:
    then = (
        "The conversation goes on by itself: return to it."
        if resumed
        else "Return to the conversation and ask again."
    )
    return page(f"Connected {server}", [f"{text(server)} is connected. {then}"])
