"""Params the SDK's dispatcher would answer wrongly, checked before it sees the request.

- The v0.3 methods (`message/send`, `tasks/get`, ...): its adapter validates the whole
  request at once and answers bad params with -32600 (invalid request) and pydantic's
  text; here they are -32602 (invalid params), naming the param.
- `ListTasks`: an unknown `status` is read as no filter at all (and every task listed);
  here it is -32602, naming the states there are.
- Any method: a value the databases cannot hold (a lone surrogate, NUL, a number past 64
  bits: `fields.check_json`) fails deep inside with Python's words (-32603); here it is
  -32602, naming the param.
"""

from __future__ import annotations

from typing import Any, cast

from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from a2a.types import TaskState
from pydantic import BaseModel, ValidationError

from agentctl import serde
from agentctl.server import jsonrpc
from agentctl.server.fields import check_json

V03_REQUESTS = cast("dict[str, type[BaseModel]]", JSONRPC03Adapter.METHOD_TO_MODEL)


def refusal(body: Any) -> dict[str, Any] | None:
    """The JSON-RPC error for the request `body` when its params are wrong in one of those
    ways; None for anything the dispatcher answers well."""
    if not isinstance(body, dict) or not isinstance(body.get("method"), str):
        return None
    method = body["method"]
    problem = _storable_problem(body.get("params"))
    if problem is None and method in V03_REQUESTS:
        problem = _v03_problem(V03_REQUESTS[method], body)
    elif problem is None and method == "ListTasks":
        problem = _status_problem(body.get("params"))
    if problem is None:
        return None
    return jsonrpc.error(body.get("id"), jsonrpc.INVALID_PARAMS, f"Invalid params: {problem}")


def _storable_problem(params: Any) -> str | None:
    try:
        check_json(params, "params")
    except ValueError as exc:
        return str(exc)
    return None


def _v03_problem(request_type: type[BaseModel], body: dict[str, Any]) -> str | None:
    try:
        request_type.model_validate(body)
    except ValidationError as exc:
        if all(e["loc"][:1] == ("params",) for e in exc.errors()):
            return jsonrpc.problems(exc)
        # The envelope itself is wrong: the dispatcher says so (-32600).
    return None


def _status_problem(params: Any) -> str | None:
    status = params.get("status") if isinstance(params, dict) else None
    if status is None:
        return None
    names = [value.name for value in TaskState.DESCRIPTOR.values]
    numbers = [value.number for value in TaskState.DESCRIPTOR.values]
    if status in (names if isinstance(status, str) else numbers) and not isinstance(status, bool):
        return None
    states = ", ".join(name for name in names if name != "TASK_STATE_UNSPECIFIED")
    return f"params.status: unknown task state {serde.dumps(status).decode()} — one of {states}"
