"""The agent card of an assistant: who it is, where to call it, and how to sign in.

Served at `/.well-known/agent-card.json` (public; `?assistant_id=` picks an assistant, the
deployment's own agent by default) and at `/a2a/{assistant_id}/.well-known/agent-card.json`
(beside the endpoint, behind the same auth), in the protocol version the client asks for
(`A2A-Version`, as a header or a query parameter): a 1.x client gets the A2A 1.0 card as
the specification defines it; a client that names no version is a 0.3 one (as the
specification says), and gets the 1.0 card plus the v0.3 fields it reads (`url`,
`protocolVersion`, `preferredTransport`, ...), as the SDK's `agent_card_to_dict` renders it.

What the card says is the operator's, never the agent's instructions: the description is
the assistant's, else `[agent].description` of agent.toml, else a neutral line naming the
agent; the skills listed are the agent itself and the `name` and `description` of each
skill's SKILL.md frontmatter (never a skill's body, nor AGENTS.md).
"""

from __future__ import annotations

from typing import Any, cast

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
from google.protobuf.json_format import MessageToDict

from agentctl.errors import BadRequest
from agentctl.server.context import Server
from agentctl.storage.base import Assistant

# The protocol versions the endpoint speaks: 1.0 methods (`SendMessage`, ...) and the
# v0.3 ones (`message/send`, ...) through the SDK's compatibility adapter.
PROTOCOL_VERSIONS = ("1.0", "0.3")
V1, V03 = PROTOCOL_VERSIONS
VERSION_HEADER = "A2A-Version"
TEXT = "text/plain"
JSON = "application/json"


def endpoint_url(base_url: str, assistant_id: str) -> str:
    return f"{base_url.rstrip('/')}/a2a/{assistant_id}"


def card_version(asked: str | None) -> str:
    """The card version for a client that sent `A2A-Version: asked` (None or "": 0.3)."""
    major, _, minor = ((asked or "").strip() or V03).partition(".")
    if major == "1":
        return V1
    if major == "0" and minor.partition(".")[0] == "3":
        return V03
    raise BadRequest(
        f"{VERSION_HEADER} {asked!r} is not a protocol version this agent speaks — send "
        f"{VERSION_HEADER}: {V1} (or {V03}, or nothing, for a 0.3 client)"
    )


def description_of(server: Server, assistant: Assistant) -> str:
    """The card's description: the operator's words, never the agent's instructions."""
    return assistant.description or server.deployment.runtime.description


def agent_card(server: Server, assistant: Assistant, base_url: str) -> AgentCard:
    """The card of `assistant` on the server reached at `base_url`."""
    project = server.deployment.runtime.project
    url = endpoint_url(base_url, assistant.assistant_id)
    description = description_of(server, assistant)
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
            description=skill.description,
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
    """The credentials the endpoint requires, each enough on its own; none when it lets
    anonymous callers in."""
    access = server.access
    if access.anonymous:
        return
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


def card_json(server: Server, assistant: Assistant, base_url: str, version: str) -> dict[str, Any]:
    """The card as a client of protocol `version` (`card_version`) reads it."""
    card = agent_card(server, assistant, base_url)
    if version == V1:
        return cast("dict[str, Any]", MessageToDict(card))
    return agent_card_to_dict(card)
