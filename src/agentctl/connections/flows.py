"""Consent flows: how a user connects a user-owned MCP server. A flow is begun (a link the
user opens), sent to the provider once (PKCE, `state`, and a cookie binding it to the
browser), and completed once by the provider's callback, which exchanges the code; every
other step is refused with a reason and the flow spent. Flows live in the agent's storage,
so one begun on a replica ends on any other; expired ones are purged an hour later, at the
next consent or disconnection."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from agentctl.connections import oauth
from agentctl.connections.clients import Clients
from agentctl.connections.sealing import TokenBox, Unreadable
from agentctl.errors import ConnectionFailed, ConsentRefused, NotFound, UserError
from agentctl.storage.base import ConnectionStore, ConsentFlow, UserConnection

FLOW_TTL = timedelta(minutes=10)  # a consent flow expires this long after it began
PURGE_AFTER = timedelta(hours=1)  # expired flows are kept this long, then purged

# The type of the interrupt a run raises when its user must connect a server.
CONNECTION_REQUIRED = "connection_required"


@dataclass(frozen=True)
class ConsentRequest:
    """A consent flow begun: the link the user opens to connect `server`."""

    server: str
    flow_id: str
    authorization_url: str
    expires_at: datetime


def consent_value(request: ConsentRequest, description: str | None) -> dict[str, Any]:
    """The value of the `connection_required` interrupt a run raises for `request`."""
    return {
        "type": CONNECTION_REQUIRED,
        "server": request.server,
        "description": description,
        "flow_id": request.flow_id,
        "authorization_url": request.authorization_url,
        "expires_at": request.expires_at.isoformat(),
        "message": (
            f"To use {request.server}, connect your account: open {request.authorization_url}"
        ),
    }


@dataclass(frozen=True)
class CompletedFlow:
    """A consent flow that made a connection: who, to what, and the run waiting for it."""

    flow_id: str
    user_id: str
    server: str
    thread_id: str | None
    assistant_id: str | None


def digest(secret: str) -> str:
    """How a flow's `state` and binding cookie are stored: sha256 hex."""
    return hashlib.sha256(secret.encode()).hexdigest()


class Flows:
    """The consent flows of one agent's users. `base_url`: the agent's public base, of the
    links users open: the console's page of a flow, `<base_url>/ui/#/connect/<flow id>`, where
    only the flow's own signed-in user can go on to the provider."""

    def __init__(
        self, store: ConnectionStore, box: TokenBox, clients: Clients, *, base_url: str
    ) -> None:
        self.store = store
        self.box = box
        self.clients = clients
        self.base_url = base_url.rstrip("/")

    async def begin(
        self,
        user_id: str,
        server: str,
        *,
        thread_id: str | None = None,
        assistant_id: str | None = None,
    ) -> ConsentRequest:
        """A new consent flow of `user_id` for `server` (expiring in 10 minutes)."""
        self.clients.server(server)
        now = datetime.now(UTC)
        await self.purge()
        flow = ConsentFlow(
            flow_id=secrets.token_urlsafe(32),
            user_id=user_id,
            server=server,
            thread_id=thread_id,
            assistant_id=assistant_id,
            status="pending",
            created_at=now,
            expires_at=now + FLOW_TTL,
        )
        await self.store.add_flow(flow)
        return ConsentRequest(
            server,
            flow.flow_id,
            f"{self.base_url}/ui/#/connect/{flow.flow_id}",
            flow.expires_at,
        )

    async def purge(self) -> None:
        """Remove the flows expired for an hour (done at each consent and revocation)."""
        await self.store.purge_flows(datetime.now(UTC) - PURGE_AFTER)

    async def flow(self, flow_id: str, *, user_id: str | None = None) -> ConsentFlow:
        """A flow not yet used; `user_id` given: it must be that user's (else NotFound)."""
        flow = await self.store.get_flow(flow_id)
        if flow is None or (user_id is not None and flow.user_id != user_id):
            raise NotFound("no such connection request — start connecting again")
        if flow.expires_at <= datetime.now(UTC):
            raise ConsentRefused(
                f"this request to connect {flow.server} expired — start connecting again"
            )
        if flow.status != "pending":
            raise ConsentRefused(
                f"this link to connect {flow.server} was already used — start connecting again"
            )
        return flow

    async def redirect(self, flow_id: str, *, user_id: str | None = None) -> tuple[str, str]:
        """The provider's authorization URL for flow `flow_id`, and the binding cookie's
        value the callback must bring back. Once per flow. `user_id` given (a signed-in
        caller): it must be the flow's user."""
        flow = await self.flow(flow_id, user_id=user_id)
        name = flow.server
        with self.clients.redacting(name):
            auth_server = await self.clients.discover(name)
            client, sealed_client = await self.clients.registered(name, auth_server)
        pkce = oauth.PKCEParameters.generate()
        state, binding = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        secret = {
            "verifier": pkce.code_verifier,
            "redirect_uri": self.clients.callback_url,
            "issuer": auth_server.issuer,
            "token_endpoint": auth_server.token_endpoint,
            "revocation_endpoint": auth_server.revocation_endpoint,
            "revocation_methods": auth_server.revocation_methods,
            "resource": auth_server.resource,
            "scopes": auth_server.scopes,
            "client": sealed_client,
        }
        advanced = replace(
            flow,
            status="redirected",
            state_hash=digest(state),
            binding_hash=digest(binding),
            sealed=self.box.seal(secret),
        )
        if not await self.store.advance_flow(advanced, from_status="pending"):
            raise ConsentRefused(
                f"this link to connect {name} was already used — start connecting again"
            )
        url = oauth.authorization_url(auth_server, client, self.clients.callback_url, state, pkce)
        return url, binding

    async def complete(
        self,
        state: str | None,
        code: str | None,
        binding: str | None,
        *,
        error: str | None = None,
        error_description: str | None = None,
    ) -> tuple[CompletedFlow, UserConnection]:
        """The provider's callback: check `state` (known, unexpired, not used) and the
        browser's `binding`, exchange `code`: the flow done, and the connection to store
        (its tokens sealed)."""
        if not state:
            raise ConsentRefused("the callback has no state — start connecting again")
        flow = await self.store.flow_by_state(digest(state))
        if flow is None:
            raise ConsentRefused(
                "this authorization callback is unknown or forged — start connecting again"
            )
        if flow.status != "redirected":
            raise ConsentRefused(
                f"this authorization callback for {flow.server} was already used — start "
                "connecting again"
            )
        done = replace(flow, status="done")
        failed = replace(flow, status="failed")
        if not await self.store.advance_flow(done, from_status="redirected"):
            raise ConsentRefused(
                f"this authorization callback for {flow.server} was already used — start "
                "connecting again"
            )
        refusal = self._refusal(flow, binding, error, error_description)
        if refusal is None and not code:
            refusal = f"the provider of {flow.server} sent no authorization code"
        if refusal is not None:
            await self.store.advance_flow(failed, from_status="done")
            raise ConsentRefused(f"{refusal} — start connecting again")
        try:
            with self.clients.redacting(flow.server):
                connection = await self._exchange(flow, str(code))
        except (ConnectionFailed, Unreadable, UserError) as exc:
            await self.store.advance_flow(failed, from_status="done")
            if isinstance(exc, Unreadable):
                raise ConsentRefused(
                    "this connection request cannot be read with the server's keys — start "
                    "connecting again"
                ) from None
            raise
        completed = CompletedFlow(
            flow.flow_id, flow.user_id, flow.server, flow.thread_id, flow.assistant_id
        )
        return completed, connection

    def _refusal(
        self,
        flow: ConsentFlow,
        binding: str | None,
        error: str | None,
        description: str | None,
    ) -> str | None:
        if flow.expires_at <= datetime.now(UTC):
            return f"this request to connect {flow.server} expired"
        if (
            not binding
            or flow.binding_hash is None
            or not hmac.compare_digest(digest(binding), flow.binding_hash)
        ):
            return (
                f"this authorization callback for {flow.server} did not come back to the "
                "browser that started it (its cookie is missing or wrong) — open the link in "
                "one browser from start to end"
            )
        if error:
            said = oauth.short(f"{error}: {description}" if description else error)
            return f"the provider of {flow.server} refused the connection ({said})"
        return None

    async def _exchange(self, flow: ConsentFlow, code: str) -> UserConnection:
        """The connection `code` makes: its tokens, sealed."""
        assert flow.sealed is not None
        secret, _ = self.box.open(flow.sealed)
        client = self.clients.client(flow.server, secret["client"])
        tokens = await oauth.exchange(
            self.clients.http,
            flow.server,
            secret["token_endpoint"],
            client,
            code=code,
            verifier=secret["verifier"],
            redirect_uri=secret["redirect_uri"],
            resource=secret["resource"],
        )
        stored = {
            **tokens.fields(),
            "issuer": secret["issuer"],
            "token_endpoint": secret["token_endpoint"],
            "revocation_endpoint": secret["revocation_endpoint"],
            "revocation_methods": secret.get("revocation_methods"),
            "resource": secret["resource"],
            "client": secret["client"],
        }
        now = datetime.now(UTC)
        requested = tuple((secret.get("scopes") or "").split())
        return UserConnection(
            user_id=flow.user_id,
            server=flow.server,
            sealed=self.box.seal(stored),
            scopes=tokens.granted(requested),
            expires_at=tokens.expiry,
            connected_at=now,
            updated_at=now,
        )
