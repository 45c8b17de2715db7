"""The HTML pages a user's browser sees at the end of connecting an MCP server (the consent
itself is the console's page, for the flow's own signed-in user): the result of the
provider's callback, and every refusal, each with a link back to the console. Plain,
self-contained HTML (no script, no form, no outside resource), every value escaped; no page
may be framed, cached or send its address on (it may carry a flow id, a code, a state)."""

from __future__ import annotations

from html import escape

from starlette.responses import HTMLResponse

HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
}
STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:34rem;margin:4rem auto;padding:0 1rem;"
    "color:#1f2328}h1{font-size:1.4rem}p{line-height:1.5}a{color:#0969da}"
)
# The console, from the callback's address (`<base>/connections/callback`): `<base>/ui/`.
CONSOLE = "../ui/"


def page(title: str, paragraphs: list[str], status: int = 200) -> HTMLResponse:
    """A page of `paragraphs` (HTML already escaped by the caller: use `text`)."""
    body = "".join(f"<p>{part}</p>" for part in paragraphs)
    html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{body}</body></html>"
    )
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def text(value: object) -> str:
    return escape(str(value))


def link(route: str, label: str) -> str:
    """A link to the console's view `route` (`connections`, `chat/<thread id>`)."""
    return f'<a href="{CONSOLE}#/{text(route)}">{text(label)}</a>'


def refused(status: int, reason: str) -> HTMLResponse:
    """A refusal (or a failure): what is wrong and what to do, never more."""
    again = link("connections", "Your connections in the console")
    return page("Could not connect", [text(reason), again], status)


def connected(server: str, resumed: bool, thread_id: str | None) -> HTMLResponse:
    then = (
        "The conversation goes on by itself: return to it."
        if resumed
        else "Return to the conversation and ask again."
    )
    back = (
        link(f"chat/{thread_id}", "Back to the conversation")
        if thread_id
        else link("connections", "Your connections in the console")
    )
    return page(f"Connected {server}", [f"{text(server)} is connected. {then}", back])
