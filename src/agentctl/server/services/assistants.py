"""Assistants: created, versioned (each change is a new version) and deleted, with what
they scheduled and, when asked, the threads they ran on."""

from __future__ import annotations

from agentctl.errors import Conflict, Unprocessable
from agentctl.server import lookup
from agentctl.server.assistant_requests import AssistantCreate, AssistantPatch
from agentctl.server.context import Server
from agentctl.server.services.crons import delete_crons_where
from agentctl.server.services.threads import delete_threads_where
from agentctl.storage.base import Assistant, new_id, now


def check_graph(server: Server, graph_id: str) -> str:
    served = server.deployment.graph_id
    if graph_id != served:
        raise Unprocessable(
            f"graph {graph_id!r} is not served here — this server serves graph {served!r}"
        )
    return graph_id


async def create_assistant(server: Server, body: AssistantCreate) -> Assistant:
    """The new assistant; with `if_exists="do_nothing"`, the one already there."""
    check_graph(server, body.graph_id)
    assistant_id = body.assistant_id or new_id()
    lookup.check_uuid("assistant_id", assistant_id)
    existing = await server.storage.assistants.get(assistant_id)
    if existing is not None:
        if body.if_exists == "do_nothing":
            return existing
        raise Conflict(
            f"assistant {assistant_id} already exists — use another id, PATCH it, or pass "
            'if_exists="do_nothing"'
        )
    assistant = Assistant(
        assistant_id=assistant_id,
        graph_id=body.graph_id,
        name=body.name or "Untitled",
        description=body.description,
        config=body.config or {},
        context=body.context or {},
        metadata=body.metadata or {},
    )
    await server.storage.assistants.put(assistant)
    return assistant


async def update_assistant(server: Server, current: Assistant, body: AssistantPatch) -> Assistant:
    """A new version of `current`, changed as `body` says; it becomes the latest."""
    if body.graph_id is not None:
        check_graph(server, body.graph_id)
    version = await server.storage.assistants.latest_version(current.assistant_id) + 1
    updated = Assistant(
        assistant_id=current.assistant_id,
        graph_id=body.graph_id or current.graph_id,
        name=body.name or current.name,
        description=body.description if body.description is not None else current.description,
        config=body.config if body.config is not None else current.config,
        context=body.context if body.context is not None else current.context,
        metadata={**current.metadata, **(body.metadata or {})},
        version=version,
        created_at=current.created_at,
        updated_at=now(),
    )
    await server.storage.assistants.put(updated)
    return updated


async def delete_assistant(server: Server, assistant_id: str, *, with_threads: bool) -> None:
    """Its runs in flight stop first (as the reference does), then what it scheduled goes,
    and with `with_threads` the threads its runs named (metadata.assistant_id). The
    deployment's own assistant is never deleted."""
    if assistant_id == server.deployment.assistant_id:
        raise Conflict(
            f"assistant {assistant_id} is the deployment's own assistant for graph "
            f"{server.deployment.graph_id!r} and cannot be deleted — PATCH it instead"
        )
    active = await server.storage.runs.all_active()
    await server.engine.cancel_and_wait([run for run in active if run.assistant_id == assistant_id])
    await delete_crons_where(server, assistant_id=assistant_id)
    if with_threads:
        await delete_threads_where(server, {"assistant_id": assistant_id})
    await server.storage.assistants.delete(assistant_id)
