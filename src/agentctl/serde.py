"""JSON for the wire: langchain messages, pydantic models, dataclasses, interrupts and
commands serialized once with orjson, the way the LangGraph API shows them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # langchain messages and every pydantic model
        return dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, (set, frozenset)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, Mapping):
        return dict(value)
    if hasattr(value, "_asdict"):  # named tuples (StateSnapshot, PregelTask, ...)
        return value._asdict()
    if isinstance(value, BaseException):
        return {"error": type(value).__name__, "message": str(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    return repr(value)


def invalid_text(text: str) -> str | None:
    """What makes `text` one no database holds, or None: the NUL character (PostgreSQL
    holds none) or a lone surrogate (`"\\ud800"`: no character at all, UTF-8 has no bytes
    for it)."""
    if "\x00" in text:
        return "the NUL character (\\u0000)"
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            return "a lone surrogate (such as \\ud800)"
    return None


def dumps(value: Any) -> bytes:
    return orjson.dumps(value, default=_default, option=_OPTIONS)


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def to_jsonable(value: Any) -> Any:
    """`value` as plain JSON types (for data that is compared or stored, not just sent)."""
    return orjson.loads(dumps(value))
