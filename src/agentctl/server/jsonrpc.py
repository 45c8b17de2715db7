"""JSON-RPC 2.0 details shared by `/mcp` and `/a2a`: ids, error objects, and what is wrong
with a request's params, in words."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SHOWN_PROBLEMS = 3


def is_request_id(value: Any) -> bool:
    """Whether `value` may be a request's id: a string or an integer (not a bool)."""
    return isinstance(value, str | int) and not isinstance(value, bool)


def error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    """The error response to the request `request_id` (None when it has no usable id)."""
    rid = request_id if is_request_id(request_id) else None
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def problems(exc: ValidationError, root: str = "params") -> str:
    """`where: what` for the first errors, e.g. `params.message.parts.0.text: Field
    required` (`root` names the whole value). Of a union (`TextPart | FilePart | …`, told
    apart by `kind`), only the member the `kind` chose is described."""
    errors = exc.errors()
    other_kind = {
        e["loc"][:-1] for e in errors if e["type"] == "literal_error" and e["loc"][-1:] == ("kind",)
    }
    chosen = [e for e in errors if not any(e["loc"][: len(o)] == o for o in other_kind)]
    lines = [
        f"{_where(e['loc'], root)}: {e['msg'].removeprefix('Value error, ')}"
        for e in (chosen or errors)[:SHOWN_PROBLEMS]
    ]
    more = len(chosen or errors) - SHOWN_PROBLEMS
    return "; ".join(lines) + (f" (and {more} more)" if more > 0 else "")


def _where(loc: tuple[int | str, ...], root: str) -> str:
    # Union members show in `loc` by their class name (`TextPart`); JSON fields are camelCase.
    names = [str(p) for p in loc if not (isinstance(p, str) and p[:1].isupper())]
    return ".".join(names) or root
