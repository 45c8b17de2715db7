"""Protocol commands on a thread: start a run, answer an interrupt, read or fork the state,
show the tree of subgraphs. Each answers `{"type": "success", "id", "result"}` or
`{"type": "error", "id", "error": <code>, "message"}`.

Runs started here stream every channel (with subgraphs), so any subscriber sees them all.
Subscriptions are a WebSocket's business (`protocol/socket.py`); over HTTP a client opens
`POST /threads/{id}/stream/events` instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from agentctl import serde
from agentctl.engine.streams import run_start, stored
from agentctl.engine.wire import PROTOCOL_MODES
from agentctl.errors import AgentctlError, CommandError, RequestError
from agentctl.server import lookup
from agentctl.server.access import Caller
from agentctl.server.context import Server
from agentctl.server.errors import describe_validation, not_found
from agentctl.server.protocol.projection import RunView, ThreadProjection
from agentctl.server.run_requests import RunCreate
from agentctl.server.services.runs import start_run
from agentctl.server.state_view import state_view, thread_config
from agentctl.storage.base import Run, Thread

Data = dict[str, Any]


def success(command_id: Any, result: Data) -> Data:
    return {"type": "success", "id": command_id, "result": result}


def error(command_id: Any, code: str, message: str) -> Data:
    return {"type": "error", "id": command_id, "error": code, "message": message}


def malformed(message: Any) -> str | None:
    """Why `message` is not a command (`{"id": <int>, "method": <str>, "params"?}`), or None."""
    if not isinstance(message, dict):
        return 'a command is a JSON object: {"id": 1, "method": "run.start", "params": {…}}'
    command_id = message.get("id")
    if not isinstance(command_id, int) or isinstance(command_id, bool):
        return "a command needs an integer `id` (its answer carries the same id)"
    if not isinstance(message.get("method"), str):
        return "a command needs a string `method`, such as run.start or input.respond"
    if not isinstance(message.get("params", {}), dict):
        return "a command's `params` must be a JSON object"
    return None


def _code_of(exc: RequestError) -> str:
    return {401: "permission_denied", 403: "permission_denied"}.get(
        exc.status, "invalid_argument" if exc.status < 500 else "unknown_error"
    )


class Commands:
    """The commands of one caller on one thread."""

    def __init__(self, server: Server, caller: Caller, thread_id: str) -> None:
        self.server = server
        self.caller = caller
        self.thread_id = thread_id
        self._methods: dict[str, Callable[[Data], Awaitable[Data]]] = {
            "run.start": self.run_start,
            "input.respond": self.input_respond,
            "agent.getTree": self.agent_get_tree,
            "state.get": self.state_get,
            "state.listCheckpoints": self.state_list_checkpoints,
            "state.fork": self.state_fork,
        }

    async def handle(self, message: Data) -> Data:
        """The answer to a well-formed command (see `malformed`)."""
        command_id, method = message["id"], message["method"]
        handler = self._methods.get(method)
        try:
            if handler is None:
                code = "not_supported" if method == "input.inject" else "unknown_command"
                raise CommandError(code, self._unknown(method))
            return success(command_id, await handler(message.get("params") or {}))
        except CommandError as exc:
            return error(command_id, exc.code, exc.message)
        except RequestError as exc:
            return error(command_id, _code_of(exc), str(exc))
        except AgentctlError as exc:  # e.g. no revision deployed, or the database is down
            return error(command_id, "unknown_error", str(exc))

    def _unknown(self, method: str) -> str:
        if method.startswith("subscription."):
            return (
                f"{method} belongs to a WebSocket on /threads/{{thread_id}}/stream/events; "
                "over HTTP, open POST /threads/{thread_id}/stream/events with the filter"
            )
        if method == "input.inject":
            return "input.inject is not supported: start a run with the message (run.start)"
        return f"unknown command {method!r}: use one of {', '.join(self._methods)}"

    # -- runs ---------------------------------------------------------------------------

    async def run_start(self, params: Data) -> Data:
        """Start a run on the thread (creating the thread if it is new). Input sent while the
        thread waits at an interrupt answers the interrupt, as the reference server does —
        decided when the run starts, so a run still ending at its interrupt counts too.
        `start_run` checks the thread is the caller's, or creates it."""
        request: Data = {
            "assistant_id": params.get("assistant_id"),
            "input": params.get("input"),
            "config": params.get("config"),
            "metadata": params.get("metadata"),
            "multitask_strategy": params.get("multitask_strategy") or "enqueue",
        }
        answers = params.get("input") is not None
        return {"run_id": await self._start(request, answers_interrupt=answers)}

    async def input_respond(self, params: Data) -> Data:
        """Answer interrupts (`{interrupt_id, response}` or `{responses: [...]}`) and resume."""
        thread = await self.thread()
        answers = params.get("responses")
        if answers is None:
            answers = [params]
        if not isinstance(answers, list) or not answers:
            raise CommandError("invalid_argument", "`responses` must be a non-empty list")
        pending = {i.get("id") for group in thread.interrupts.values() for i in group}
        # A run still going on (it may be stopping at the interrupt right now, before the
        # thread records it): the answer waits its turn and fails the run if nothing waits.
        busy = bool(await self.server.storage.runs.active(self.thread_id))
        resume: Data = {}
        for answer in answers:
            interrupt_id = answer.get("interrupt_id") if isinstance(answer, dict) else None
            if not isinstance(interrupt_id, str):
                raise CommandError("invalid_argument", "each response needs its `interrupt_id`")
            if interrupt_id not in pending and not busy:
                raise CommandError(
                    "no_such_interrupt",
                    f"interrupt {interrupt_id!r} is not pending on this thread "
                    f"(pending: {', '.join(sorted(map(str, pending))) or 'none'})",
                )
            resume[interrupt_id] = answer.get("response")
        command: Data = {"resume": resume}
        for key in ("update", "goto"):
            if params.get(key) is not None:
                command[key] = params[key]
        request = {
            "assistant_id": await self._assistant_id(),
            "command": command,
            "config": params.get("config"),
            "metadata": params.get("metadata"),
            "strict_resume": busy,
        }
        await self._start(request)
        return {}

    async def state_fork(self, params: Data) -> Data:
        """A new run from an earlier checkpoint of the thread."""
        await self.thread()
        checkpoint_id = params.get("checkpoint_id")
        if not isinstance(checkpoint_id, str) or not checkpoint_id:
            raise CommandError("invalid_argument", "state.fork needs the `checkpoint_id`")
        config = thread_config(self.thread_id, checkpoint_id=checkpoint_id)
        if await self.server.storage.checkpointer.aget_tuple(config) is None:
            raise CommandError("no_such_checkpoint", f"no checkpoint {checkpoint_id!r} here")
        request = {
            "assistant_id": await self._assistant_id(),
            "input": params.get("input"),
            "config": params.get("config"),
            "checkpoint_id": checkpoint_id,
        }
        return {"run_id": await self._start(request), "thread_id": self.thread_id}

    async def _assistant_id(self) -> str:
        """The assistant of the thread's latest run: a resumed or forked run goes on with it."""
        runs = await self.server.storage.runs.list(self.thread_id, status=None, limit=1, offset=0)
        return runs[0].assistant_id if runs else self.server.deployment.assistant_id

    async def _start(self, request: Data, *, answers_interrupt: bool = False) -> str:
        request = {key: value for key, value in request.items() if value is not None}
        try:
            body = RunCreate.model_validate(
                {
                    **request,
                    "stream_mode": PROTOCOL_MODES,
                    "stream_subgraphs": True,
                    "if_not_exists": "create",
                }
            )
        except ValidationError as exc:
            problem = describe_validation(list(map(dict, exc.errors())))
            raise CommandError("invalid_argument", problem) from None
        run = await start_run(
            self.server, self.caller, body, self.thread_id, answers_interrupt=answers_interrupt
        )
        return run.run_id

    # -- the thread's state -------------------------------------------------------------

    async def state_get(self, params: Data) -> Data:
        await self.thread()
        if params.get("namespace"):
            raise CommandError("no_such_namespace", "state.get reads the root graph's state")
        graph = self.server.deployment.runtime.graph
        view = state_view(await graph.aget_state(thread_config(self.thread_id)))
        values = serde.to_jsonable(view["values"]) or {}
        keys = params.get("keys")
        if isinstance(keys, list) and isinstance(values, dict):
            values = {k: v for k, v in values.items() if k in keys}
        result: Data = {"values": values}
        if view.get("checkpoint"):
            result["checkpoint"] = {"id": view["checkpoint"]["checkpoint_id"]}
        return result

    async def state_list_checkpoints(self, params: Data) -> Data:
        await self.thread()
        limit = params.get("limit", 10)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise CommandError("invalid_argument", "`limit` must be a whole number 1–1000")
        before = params.get("before")
        if before is not None and not isinstance(before, str):
            raise CommandError("invalid_argument", "`before` must be a checkpoint id")
        before_config = thread_config(self.thread_id, checkpoint_id=before) if before else None
        graph = self.server.deployment.runtime.graph
        checkpoints = []
        async for snapshot in graph.aget_state_history(
            thread_config(self.thread_id), before=before_config, limit=limit
        ):
            metadata = serde.to_jsonable(snapshot.metadata or {})
            summary: Data = {
                "id": snapshot.config["configurable"]["checkpoint_id"],
                "timestamp": snapshot.created_at or "",
                "step": metadata.get("step", 0),
                "metadata": metadata,
            }
            if snapshot.next:
                summary["node_name"] = snapshot.next[0]
            checkpoints.append(summary)
        return {"checkpoints": checkpoints}

    async def agent_get_tree(self, params: Data) -> Data:
        """The root graph and the subgraphs (subagents) its latest run (or `run_id`) opened."""
        await self.thread()
        wanted = params.get("run_id")
        run: Run | None = None
        if wanted is None:
            runs = await self.server.storage.runs.list(
                self.thread_id, status=None, limit=1, offset=0
            )
            run = runs[0] if runs else None
            wanted = run.run_id if run else None
        elif isinstance(wanted, str):
            run = await self.server.storage.runs.get(wanted)
        view: RunView | None = None
        if isinstance(wanted, str):
            projection = ThreadProjection(self.server.deployment.graph_id)
            start = run_start(run) if run is not None and run.thread_id == self.thread_id else None
            async for event in stored(
                self.server.storage, self.thread_id, run_id=wanted, start=start
            ):
                view = projection.view_of(event)
        if params.get("run_id") is not None and view is None:
            raise CommandError("no_such_run", f"no run {wanted!r} on this thread")
        return {"tree": tree(view, self.server.deployment.graph_id)}

    async def thread(self) -> Thread:
        """The thread; 404 for another user's, as for a missing one."""
        lookup.check_uuid("thread_id", self.thread_id)
        return await lookup.get_thread(self.server, self.thread_id, self.caller)

    async def refuse_foreign(self) -> None:
        """404 for another user's thread, as for a missing one; a thread not created yet
        passes (a `run.start` creates it)."""
        lookup.check_uuid("thread_id", self.thread_id)
        thread = await self.server.storage.threads.get(self.thread_id)
        if thread is not None and not self.caller.owns(thread.metadata):
            raise not_found("thread", self.thread_id)


def tree(view: RunView | None, graph_name: str) -> Data:
    status = (view.status if view else None) or "completed"
    root: Data = {"namespace": [], "status": status, "graph_name": graph_name, "children": []}
    nodes: dict[tuple[str, ...], Data] = {(): root}
    for path, child in view.namespaces.items() if view else ():
        node: Data = {
            "namespace": list(path),
            "status": child.status,
            "graph_name": child.graph_name,
            "children": [],
        }
        nodes[path] = node
        nodes.get(path[:-1], root)["children"].append(node)
    return root
