"""The agent card of an assistant: who it is, where to call it, and how to sign in.

Served at `/.well-known/agent-card.json` (public; `?assistant_id=` picks an assistant, the
deployment's own agent by default) and at `/a2a/{assistant_id}/.well-known/agent-card.json`
(beside the endpoint, behind the same auth), rendered by the SDK's `agent_card_to_dict`, which
adds the v0.3 fields (`url`, `protocolVersion`, ...) older clients read.
"""

from __future__ import annotations

from typing import Any

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from agentctl.server.context import Server
from agentctl.storage.base import Assistant

# The protocol versions the endpoint speaks: 1.0 methods (`SendMessage`, ...) and the
# v0.3 ones (`message/send`, ...) through the SDK's compatibility adapter.
PROTOCOL_VERSIONS = ("1.0", "0.3")
TEXT = "text/plain"
JSON = "application/json"


def endpoint_url(base_url: str, assistant_id: str) -> str:
    return f"{base_url.rstrip('/')}/a2a/{assistant_id}"


def agent_card(server: Server, assistant: Assistant, base_url: str) -> AgentCard:
    """The card of `assistant` on the server reached at `base_url`."""
    runtime = server.deployment.runtime
    project = runtime.project
    url = endpoint_url(base_url, assistant.assistant_id)
    description = assistant.description or runtime.description
    skills = [
        AgentSkill(
            id=assistant.graph_id,
            name=assistant.name,
            description=description,
            tags=["agent"],
            input_modes=[TEXT, JSON],
            output_modes=[TEXT],
        )
    ]
    skills += [
        AgentSkill(
            id=f"skill:{skill.name}",
            name=skill.name,
            description=skill.description or skill.name,
            tags=["skill"],
        )
        for skill in project.skills
    ]
    card = AgentCard(
        name=assistant.name,
        description=description,
        version=server.deployment.revision_id,
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=version)
            for version in PROTOCOL_VERSIONS
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=[TEXT, JSON],
        default_output_modes=[TEXT],
        skills=skills,
    )
    _add_security(server, card)
    return card


def _add_security(server: Server, card: AgentCard) -> None:
    """The credentials the endpoint accepts, each enough on its own."""
    access = server.access
    if access.authenticator is not None:
        _accept(
            card,
            "bearer",
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="bearer",
                    description="the session token of the deployment's identity provider",
                )
            ),
        )
    if access.api_key is not None:
        _accept(
            card,
            "apiKey",
            SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(
                    location="header",
                    name="x-api-key",
                    description="the deployment's API key (operators)",
                )
            ),
        )


def _accept(card: AgentCard, name: str, scheme: SecurityScheme) -> None:
    """`scheme` (under `name`) is enough on its own to call the endpoint."""
    card.security_schemes[name].CopyFrom(scheme)
    card.security_requirements.append(SecurityRequirement(schemes={name: StringList()}))


def card_json(server: Server, assistant: Assistant, base_url: str) -> dict[str, Any]:
    card: dict[str, Any] = agent_card_to_dict(agent_card(server, assistant, base_url))
    return card
