"""Finding the records a request names, or answering 404 — also for records that exist but
belong to another user, so nothing tells them apart."""

from __future__ import annotations

import uuid

from agentctl.engine.deployment import assistant_uuid
from agentctl.errors import Forbidden, NotFound, Unprocessable
from agentctl.server.access import Caller
from agentctl.server.context import Server
from agentctl.server.errors import not_found
from agentctl.storage.base import Assistant, Run, Thread


def assistant_key(server: Server, assistant_id: str) -> str:
    """A graph name is accepted wherever an assistant id is."""
    if assistant_id == server.deployment.graph_id:
        return assistant_uuid(assistant_id)
    return assistant_id


async def get_assistant(server: Server, assistant_id: str) -> Assistant:
    assistant = await server.storage.assistants.get(assistant_key(server, assistant_id))
    if assistant is None:
        raise NotFound(
            f"assistant {assistant_id!r} not found — this server serves the agent "
            f"{server.deployment.graph_id!r} (assistant id {server.deployment.assistant_id})",
        )
    return assistant


def check_uuid(kind: str, value: str) -> str:
    try:
        uuid.UUID(value)
    except ValueError:
        raise Unprocessable(f"{kind} {value!r} is not a UUID") from None
    return value


def require_operator(caller: Caller, action: str) -> None:
    """403 for a signed-in user: `action` (e.g. "change assistants") is the operator's."""
    if caller.scoped:
        raise Forbidden(f"only the deployment's operator can {action}")


async def get_thread(server: Server, thread_id: str, caller: Caller) -> Thread:
    thread = await server.storage.threads.get(thread_id)
    if thread is None or not caller.owns(thread.metadata):
        raise not_found("thread", thread_id)
    return thread


async def still_visible(server: Server, thread_id: str, caller: Caller) -> bool:
    """Whether the thread a long-lived stream follows is still there and `caller`'s: a
    stream checks again at each new run, as the thread may have been deleted (and its id
    taken by someone else)."""
    thread = await server.storage.threads.get(thread_id)
    return thread is not None and caller.owns(thread.metadata)


async def get_run(server: Server, thread_id: str, run_id: str, caller: Caller) -> Run:
    run = await server.storage.runs.get(run_id)
    if run is None or run.thread_id != thread_id or not await owns_thread(server, run, caller):
        raise not_found("run", run_id)
    return run


async def owns_thread(server: Server, run: Run, caller: Caller) -> bool:
    """Whether `caller` may see `run`: runs belong to whoever owns their thread."""
    if not caller.scoped:
        return True
    thread = await server.storage.threads.get(run.thread_id)
    return thread is not None and caller.owns(thread.metadata)
