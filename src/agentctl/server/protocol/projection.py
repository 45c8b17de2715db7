"""The thread's event log, seen as protocol events.

`ThreadProjection` reads a thread's log from its first event and turns each stored event
into the protocol events it stands for: `values`, `updates`, `messages`, `tools`, `tasks`,
`checkpoints`, `custom`, `input.requested` (an interrupt) and `lifecycle` (a run, or a
subgraph such as a subagent, starting and ending). Every event gets `seq` (1, 2, … over the
whole thread) and an `event_id` made from the stored event's id (a lifecycle event's from
its run's id: `synth:<run_id>:lc|<namespace>|<status>`, where clients read it), so any
connection that reads the same log numbers the same events the same way: a client that
reconnects with `since` resumes exactly where it was, whichever replica it reaches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentctl import serde
from agentctl.engine.wire import END_EVENT
from agentctl.server.protocol.messages import MessageStreams, tool_result_message
from agentctl.storage.base import Event, event_position

Data = dict[str, Any]
# (method, namespace, data, node)
Item = tuple[str, list[str], Any, str | None]
ROOT_NAMESPACE: list[str] = []


@dataclass
class _Namespace:
    path: tuple[str, ...]
    graph_name: str
    status: str = "started"


@dataclass
class RunView:
    """What one run has shown so far: open subgraphs, messages, interrupts."""

    run_id: str
    graph_name: str
    status: str | None = None  # of the root: running, interrupted, completed, failed
    namespaces: dict[tuple[str, ...], _Namespace] = field(default_factory=dict)
    interrupts: set[str] = field(default_factory=set)
    # Tool-calling tasks by task id: (tool call id, the subagent it starts, if any).
    tool_tasks: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    error: str | None = None
    messages: MessageStreams = field(default_factory=MessageStreams)

    def project(self, name: str, data: Any) -> list[Item]:
        base, *segments = name.split("|")
        namespace = list(segments)
        out: list[Item] = []
        if namespace and base not in ("error", "metadata"):
            self._open(namespace, out)
        handler = _HANDLERS.get(base)
        if handler is not None:
            handler(self, namespace, data, out)
        return out

    # -- lifecycle ------------------------------------------------------------------------

    def _lifecycle(self, namespace: list[str], event: str, out: list[Item], **facts: Any) -> None:
        data = {"event": event, **{k: v for k, v in facts.items() if v is not None}}
        out.append(("lifecycle", namespace, data, None))

    def _open(self, namespace: list[str], out: list[Item]) -> None:
        """`started` for each subgraph of `namespace` not seen yet."""
        for depth in range(1, len(namespace) + 1):
            path = tuple(namespace[:depth])
            if path in self.namespaces:
                continue
            node, _, task_id = path[-1].partition(":")
            tool_call_id, subagent = self.tool_tasks.get(task_id, (None, None))
            graph_name = subagent or node
            self.namespaces[path] = _Namespace(path, graph_name)
            cause = {"type": "toolCall", "tool_call_id": tool_call_id} if tool_call_id else None
            self._lifecycle(list(path), "started", out, graph_name=graph_name, cause=cause)

    def _close_child(self, namespace: list[str], node: str, out: list[Item]) -> None:
        """The oldest open subgraph that node `node` of `namespace` ran has ended."""
        for child in self.namespaces.values():
            parent, segment = child.path[:-1], child.path[-1]
            if (
                child.status == "started"
                and list(parent) == namespace
                and segment.partition(":")[0] == node
            ):
                self._end(child, "completed", out)
                return

    def _end(self, child: _Namespace, status: str, out: list[Item]) -> None:
        for path in [p for p in self.namespaces if p[: len(child.path)] == child.path]:
            nested = self.namespaces[path]
            if nested is not child and nested.status == "started":
                self._end(nested, status, out)
        self._finish_messages(child.path, out)
        child.status = status
        self._lifecycle(list(child.path), status, out, graph_name=child.graph_name)

    def _finish_messages(self, prefix: tuple[str, ...], out: list[Item]) -> None:
        out.extend(("messages", ns, e, None) for ns, e in self.messages.finish_under(prefix))

    def _requested(self, namespace: list[str], interrupts: Any, out: list[Item]) -> None:
        """`input.requested` for each new interrupt; the run then waits for a response."""
        for interrupt in interrupts if isinstance(interrupts, list) else ():
            interrupt_id = interrupt.get("id") if isinstance(interrupt, dict) else None
            if not isinstance(interrupt_id, str) or interrupt_id in self.interrupts:
                continue
            self.interrupts.add(interrupt_id)
            value = interrupt.get("value")
            request = {"interrupt_id": interrupt_id, "payload": value, "value": value}
            out.append(("input.requested", namespace, request, None))
            for depth in range(len(namespace), 0, -1):  # the subgraphs it paused, inner first
                child = self.namespaces.get(tuple(namespace[:depth]))
                if child is not None and child.status == "started":
                    self._end(child, "interrupted", out)
            if self.status != "interrupted":
                self.status = "interrupted"
                self._lifecycle(ROOT_NAMESPACE, "interrupted", out, graph_name=self.graph_name)

    def end(self, data: Data) -> list[Item]:
        """The run's end: open subgraphs and messages close, then the root's final status.
        A message still streaming when the run failed or was cancelled ends with an `error`
        event, not `message-finish`: it was cut short, and a client must not show it as
        whole."""
        out: list[Item] = []
        status = data.get("status")
        failure: str | None = None
        if data.get("cancelled"):
            failure = "the run was cancelled"
        elif status not in ("success", "interrupted"):
            failure = self.error or f"the run ended with status {status}"
        if failure is not None:
            code = "cancelled" if data.get("cancelled") else None
            out.extend(("messages", ns, e, None) for ns, e in self.messages.fail(failure, code))
        final = "failed" if failure is not None else "completed"
        if status == "interrupted" and failure is None:
            final = "interrupted"  # paused: at an interrupt, or at a breakpoint
        for child in reversed(list(self.namespaces.values())):  # they end as their run did
            if child.status == "started":
                self._end(child, final, out)
        self._finish_messages((), out)
        if final != self.status:  # an interrupt was shown as it came
            self._lifecycle(ROOT_NAMESPACE, final, out, graph_name=self.graph_name, error=failure)
        self.status = final
        return out


def _metadata(view: RunView, namespace: list[str], data: Any, out: list[Item]) -> None:
    if view.status is None:
        view.status = "running"
        view._lifecycle(ROOT_NAMESPACE, "running", out, graph_name=view.graph_name)


def _values(view: RunView, namespace: list[str], data: Any, out: list[Item]) -> None:
    if isinstance(data, dict) and "__interrupt__" in data:
        view._requested(namespace, data["__interrupt__"], out)
        data = {k: v for k, v in data.items() if k != "__interrupt__"}
    if data:
        out.append(("values", namespace, data, None))


def _updates(view: RunView, namespace: list[str], data: Any, out: list[Item]) -> None:
    for node, update in (data or {}).items() if isinstance(data, dict) else ():
        if node == "__interrupt__":
            view._requested(namespace, update, out)
            continue
        view._finish_messages(tuple(namespace), out)
        if update is not None:
            values = update if isinstance(update, dict) else {"value": update}
            out.append(("updates", namespace, values, node))
        view._close_child(namespace, node, out)


def _messages(view: RunView, namespace: list[str], data: Any, out: list[Item]) -> None:
    if isinstance(data, list) and len(data) == 2 and isinstance(data[0], dict):
        metadata = data[1] if isinstance(data[1], dict) else {}
        for event in view.messages.feed(namespace, data[0], metadata):
            out.append(("messages", namespace, event, None))


def _tools(view: RunView, namespace: list[str], data: Any, out: list[Item]) -> None:
    if not isinstance(data, dict):
        return
    node = data.pop("__node", None)
    out.append(("tools", namespace, data, node if isinstance(node, str) else None))
    if data.get("event") == "tool-finished" and (result := tool_result_message(data)):
        tool_call_id, events = result
        # Under a namespace of its own, as the reference does: a root-scoped `messages`
        # subscription sees the model's messages, not tool results.
        path = [*namespace, f"tools:{tool_call_id}"]
        out.extend(("messages", path, event, None) for event in events)


def _tasks(view: RunView, namespace: list[str], data: Any, out: list[Item]) -> None:
    if not isinstance(data, dict):
        return
    calls = data.get("input")
    if "result" not in data and isinstance(calls, list) and calls:
        call = calls[0] if isinstance(calls[0], dict) else {}
        if call.get("type") == "tool_call" and isinstance(call.get("id"), str):
            args = call.get("args")
            subagent = args.get("subagent_type") if isinstance(args, dict) else None
            if call.get("name") != "task":
                subagent = None
            view.tool_tasks[str(data.get("id"))] = (
                call["id"],
                subagent if isinstance(subagent, str) else None,
            )
    out.append(("tasks", namespace, data, None))


def _checkpoints(view: RunView, namespace: list[str], data: Any, out: list[Item]) -> None:
    if not isinstance(data, dict):
        return
    configurable = (data.get("config") or {}).get("configurable") or {}
    parent = ((data.get("parent_config") or {}).get("configurable") or {}).get("checkpoint_id")
    metadata = data.get("metadata") or {}
    checkpoint: Data = {
        "id": configurable.get("checkpoint_id"),
        "step": metadata.get("step", 0),
        "source": metadata.get("source", "loop"),
    }
    if parent:
        checkpoint["parent_id"] = parent
    out.append(("checkpoints", namespace, checkpoint, None))


def _custom(view: RunView, namespace: list[str], data: Any, out: list[Item]) -> None:
    custom: Data = {"payload": data}
    if isinstance(data, dict) and isinstance(data.get("name"), str) and data["name"]:
        custom["name"] = data["name"]  # subscribed to as `custom:<name>`
    out.append(("custom", namespace, custom, None))


def _error(view: RunView, namespace: list[str], data: Any, out: list[Item]) -> None:
    if isinstance(data, dict):
        view.error = f"{data.get('error', 'Error')}: {data.get('message', '')}".rstrip(": ")


_HANDLERS = {
    "metadata": _metadata,
    "values": _values,
    "updates": _updates,
    "messages": _messages,
    "tools": _tools,
    "tasks": _tasks,
    "checkpoints": _checkpoints,
    "custom": _custom,
    "error": _error,
}


class ThreadProjection:
    """The protocol events of one thread's log, read in order from its first event."""

    def __init__(self, graph_name: str) -> None:
        self.graph_name = graph_name
        self.seq = 0
        self.runs: dict[str, RunView] = {}
        self.last_run: RunView | None = None

    def project(self, event: Event) -> list[Data]:
        if event.event == END_EVENT:
            view = self.runs.pop(event.run_id, None) or RunView(event.run_id, self.graph_name)
            self.last_run = view
            items = view.end(serde.loads(event.data))
        else:
            items = self._view(event.run_id).project(event.event, serde.loads(event.data))
        timestamp = event_position(event.id)[0]
        out = []
        for index, (method, namespace, data, node) in enumerate(items):
            self.seq += 1
            params: Data = {"namespace": namespace, "timestamp": timestamp, "data": data}
            if node is not None:
                params["node"] = node
            event_id = f"{event.id}.{index}"
            if method == "lifecycle":  # clients read the run id from a lifecycle event's id
                event_id = f"synth:{event.run_id}:lc|{'/'.join(namespace)}|{data['event']}"
            out.append(
                {
                    "type": "event",
                    "event_id": event_id,
                    "seq": self.seq,
                    "method": method,
                    "params": params,
                }
            )
        return out

    def view_of(self, event: Event) -> RunView:
        """What the run of `event` has shown, once `event` is taken into account."""
        self.project(event)
        assert self.last_run is not None
        return self.last_run

    def _view(self, run_id: str) -> RunView:
        view = self.runs.get(run_id)
        if view is None:
            view = self.runs[run_id] = RunView(run_id, self.graph_name)
        self.last_run = view
        return view
