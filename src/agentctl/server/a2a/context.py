"""Carrying the caller of an A2A request through the SDK to our executor and task store.

`Authentication` resolved the `Caller` before the route ran; the route puts the assistant
the path names beside it; `CallerContextBuilder` copies both into the SDK's
`ServerCallContext`, whose `user` names the owner of the tasks the request creates.
"""

from __future__ import annotations

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.utils.errors import InternalError
from starlette.requests import Request

from agentctl.server.access import Caller, caller_of
from agentctl.storage.base import Assistant

ASSISTANT = "agentctl.assistant"
TASK_METADATA_KEY = "a2a_task_id"  # in the metadata of the runs A2A starts
RUN_ID_KEY = "runId"  # in the metadata of a task (its latest run) and of its `working` update


class CallerUser(User):
    """The caller as the SDK sees them: its task stores keep tasks per `user_name` (the
    signed-in user's id; "" for the operator and anonymous callers)."""

    def __init__(self, caller: Caller) -> None:
        self.caller = caller

    @property
    def is_authenticated(self) -> bool:
        return self.caller.user is not None

    @property
    def user_name(self) -> str:
        return self.caller.user or ""


class CallerContextBuilder(DefaultServerCallContextBuilder):
    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        caller = caller_of(request)
        context.user = CallerUser(caller)
        context.state[ASSISTANT] = request.scope["state"][ASSISTANT]
        return context


def caller_in(context: ServerCallContext) -> Caller:
    user = context.user
    if isinstance(user, CallerUser):
        return user.caller
    raise InternalError(message="the A2A request was not authenticated")


def assistant_in(context: ServerCallContext) -> Assistant:
    assistant = context.state.get(ASSISTANT)
    if not isinstance(assistant, Assistant):
        raise InternalError(message="the A2A request names no assistant")
    return assistant
