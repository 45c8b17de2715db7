"""The middleware that meters a run: each model call's tokens, counted under the model's
name as agent.toml declares it, and a step for each model call, tool call, subagent
(`task`) and MCP call, on the ledger the engine bound to the run (`metering.ledger.current`).

Steps nest by the context they run in: a subagent's model and tool calls run inside its
`task` tool call, so their steps are that call's children. With no ledger bound (a graph
used outside the engine), each call costs one context variable read.

A middleware rather than a callback handler on the run, as `fencing.HoldsRun`: a callback
would make langchain build run managers for every step of every run. The model calls a
middleware makes on its own, outside the agent's model step (deepagents' summaries of a
long conversation), are counted by `Unmetered`, a callback on the model objects alone."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain.agents.middleware import AgentMiddleware
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import AIMessage
from langgraph.errors import GraphBubbleUp

from agentctl.metering import ledger as ledgers
from agentctl.metering.ledger import Ledger, Step, StepKind
from agentctl.metering.usage import finish_reason_of, tokens_of

# The tool deepagents runs a subagent with.
TASK_TOOL = "task"
# The metadata key naming the MCP server a tool comes from (`mcp_tools`, `user_tools`).
MCP_SERVER = "mcp_server"

# Set while an agent's model call is metered by `Meters`: `Unmetered` leaves it alone.
_in_model_step: ContextVar[bool] = ContextVar("agentctl_in_model_step", default=False)


class Meters(AgentMiddleware):  # type: ignore[misc]
    """Meters the model and tool calls of one agent (the main one or a subagent).

    `names`: the declared name (``provider:model``) of each model object the revision
    built, by identity; `default`: this agent's own model's, for a model object it did not
    build (one a middleware swapped in)."""

    def __init__(self, names: Mapping[int, str], default: str) -> None:
        super().__init__()
        self._names = names
        self._default = default

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        ledger = ledgers.current.get()
        if ledger is None:
            return await handler(request)
        await ledger.before_model_call()
        model = self._names.get(id(request.model), self._default)
        with ledger.step("model", model) as step:
            inside = _in_model_step.set(True)
            try:
                response = await handler(request)
            finally:
                _in_model_step.reset(inside)
            message = ai_message(response)
            tokens = tokens_of(message)
            if tokens is not None:
                ledger.count(model, tokens, step)
            if step is not None:
                step.model = model
                step.finish_reason = finish_reason_of(message)
        return response

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        ledger = ledgers.current.get()
        if ledger is None:
            return await handler(request)
        kind, name = step_of(request.tool_call, request.tool)
        # A consent request or an approval gate inside the call pauses the run: no failure.
        with ledger.step(kind, name, pauses=(GraphBubbleUp,)):
            return await handler(request)


class Unmetered(AsyncCallbackHandler):  # type: ignore[misc]
    """Meters the calls of one model object that no agent's model step meters: those a
    middleware makes itself (a summary of the conversation). Set on the model objects a
    revision builds (`models.create_models`), it runs for their calls only."""

    run_inline = True

    def __init__(self, model: str) -> None:
        self.model = model  # as agent.toml names it
        self._open: dict[UUID, tuple[Ledger, Step | None]] = {}

    async def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        ledger = ledgers.current.get()
        if ledger is not None and not _in_model_step.get():
            self._open[run_id] = (ledger, ledger.open("model", self.model))

    async def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        opened = self._open.pop(run_id, None)
        if opened is None:
            return
        ledger, step = opened
        generations = getattr(response, "generations", None) or [[]]
        message = getattr(generations[0][0], "message", None) if generations[0] else None
        tokens = tokens_of(message)
        if tokens is not None:
            ledger.count(self.model, tokens, step)
        if step is not None:
            step.model = self.model
            step.finish_reason = finish_reason_of(message)
        ledger.close(step)

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        opened = self._open.pop(run_id, None)
        if opened is not None:
            opened[0].close(opened[1], error)


def step_of(call: Mapping[str, Any], tool: Any) -> tuple[StepKind, str]:
    """The kind and name of the step of a tool call: the subagent a `task` runs, the
    "server/tool" of an MCP server's tool (a called agent's too), else the tool."""
    name = str(call.get("name") or "")
    metadata = getattr(tool, "metadata", None)
    server = metadata.get(MCP_SERVER) if isinstance(metadata, Mapping) else None
    if server:
        return "mcp", f"{server}/{name}"
    if name == TASK_TOOL:
        args = call.get("args")
        subagent = args.get("subagent_type") if isinstance(args, Mapping) else None
        return "subagent", str(subagent or name)
    return "tool", name


def ai_message(response: Any) -> AIMessage | None:
    """The model's message in what a model call handler returned: an `AIMessage`, a
    `ModelResponse` (its `result`), or an `ExtendedModelResponse` (its `model_response`)."""
    if isinstance(response, AIMessage):
        return response
    inner = getattr(response, "model_response", None)
    if inner is not None:
        return ai_message(inner)
    for message in reversed(getattr(response, "result", None) or ()):
        if isinstance(message, AIMessage):
            return message
    return None
