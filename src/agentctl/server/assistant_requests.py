"""What a client may ask of an assistant: a new one, or a new version of one."""

from __future__ import annotations

from typing import Any

from agentctl.server.fields import Body, Config, Metadata, OnConflict


class AssistantCreate(Body):
    graph_id: str
    assistant_id: str | None = None
    config: Config | None = None
    context: dict[str, Any] | None = None
    metadata: Metadata | None = None
    if_exists: OnConflict = "raise"
    name: str | None = None
    description: str | None = None


class AssistantPatch(Body):
    graph_id: str | None = None
    config: Config | None = None
    context: dict[str, Any] | None = None
    metadata: Metadata | None = None
    name: str | None = None
    description: str | None = None
