"""Users' connections to the agent's user-owned MCP servers (docs/connections.md).

The API (a signed-in user's; the operator sees counts): list, revoke (one or all), start a
connection, and — for the console, whose page `<base>/ui/#/connect/<flow id>` is the link of
a consent request — a flow and its provider URL, only ever to the flow's own signed-in user.
The one public page is the provider's callback.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from starlette.responses import Response

from agentctl.errors import AgentctlError, Forbidden
from agentctl.server import connect_pages
from agentctl.server.access import CONNECT_CALLBACK, Caller, caller_of
from agentctl.server.context import Server, server_of
from agentctl.server.services import connections as service
from agentctl.server.views import json_response

router = APIRouter(prefix="/connections", tags=["connections"])

COOKIE = "agentctl_connect"


@router.get("")
async def list_connections(request: Request) -> Response:
    """A user: every user-owned server and whether they connected it. The operator (the
    deployment key): every user-owned server and how many users connected it."""
    caller = caller_of(request)
    server = server_of(request)
    if caller.user is None:  # the operator, or anyone where no one signs in
        return json_response({"servers": await service.operator_view(server)})
    return json_response({"connections": await service.user_view(server, caller.user)})


@router.delete("", status_code=204)
async def revoke_all(request: Request) -> Response:
    """Remove every connection of the caller (and revoke them at the providers)."""
    user = _user(caller_of(request), "disconnect a server")
    await service.disconnect(server_of(request), user)
    return Response(status_code=204)


@router.delete("/{name}", status_code=204)
async def revoke(request: Request, name: str) -> Response:
    """Remove the caller's connection to `name` (and revoke it at the provider)."""
    user = _user(caller_of(request), "disconnect a server")
    await service.disconnect(server_of(request), user, name)
    return Response(status_code=204)


@router.post("/{name}/authorize")
async def authorize(request: Request, name: str) -> Response:
    """Start connecting `name` without a run: the flow's id, authorization URL and expiry."""
    user = _user(caller_of(request), "connect a server")
    return json_response(await service.begin(server_of(request), user, name))


@router.get("/flows/{flow_id}")
async def flow(request: Request, flow_id: str) -> Response:
    """The caller's flow as the console's page for it shows it (another user's: 404)."""
    user = _user(caller_of(request), "connect a server")
    return json_response(await service.flow_view(server_of(request), flow_id, user))


@router.post("/flows/{flow_id}/redirect")
async def redirect_url(request: Request, flow_id: str) -> Response:
    """The provider URL of the caller's flow (the console opens it), with the cookie that
    binds the flow to this browser."""
    user = _user(caller_of(request), "connect a server")
    server = server_of(request)
    sent = await service.redirect(server, flow_id, user)
    response = json_response({"redirect_url": sent.url})
    _bind(response, server, request, sent)
    return response


# -- the pages ---------------------------------------------------------------------------


@router.get("/callback", include_in_schema=False)
async def callback(request: Request) -> Response:
    """Where the provider sends the browser back: the connection is made and the run that
    waited for it goes on."""
    server = server_of(request)
    try:
        done = await service.complete(server, request.query_params, request.cookies.get(COOKIE))
    except AgentctlError as exc:
        return _refused(exc)
    response = connect_pages.connected(done.server, done.resumed, done.thread_id)
    response.delete_cookie(COOKIE, path=_cookie_path(server, request))
    return response


def _user(caller: Caller, what: str) -> str:
    if caller.user is None:
        raise Forbidden(
            f"only a signed-in user can {what}: connections are each user's own — call with "
            "a user's token (Authorization: Bearer)"
        )
    return caller.user


def _refused(exc: AgentctlError) -> Response:
    """The page of a refusal (a failure of the provider too: a 502 naming it)."""
    return connect_pages.refused(exc.status if exc.status >= 400 else 400, str(exc))


def _bind(response: Response, server: Server, request: Request, sent: service.Redirect) -> None:
    response.set_cookie(
        COOKIE,
        sent.binding,
        max_age=sent.max_age,
        path=_cookie_path(server, request),
        secure=request.url.scheme == "https" or _public_https(server),
        httponly=True,
        samesite="lax",
    )


def _cookie_path(server: Server, request: Request) -> str:
    """The callback's path as the browser sees it (the agent's base path on a platform)."""
    base = service.public_base(server)
    path = urlsplit(base).path if base else request.scope.get("root_path", "")
    return path.rstrip("/") + CONNECT_CALLBACK


def _public_https(server: Server) -> bool:
    base = service.public_base(server)
    return base is not None and base.startswith("https://")
