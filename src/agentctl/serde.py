"""JSON for the wire: langchain messages, pydantic models, dataclasses, interrupts and
commands serialized once with orjson, the way the LangGraph API shows them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
# Per class: whether its instances' fields (`__dict__`, then the extra ones) are what
# `model_dump` gives orjson (see `_fields_are_dump`).
_PLAIN_MODELS: dict[type, bool] = {}


def _fields_are_dump(cls: type) -> bool:
    """Whether a pydantic model class serializes as its fields do: a langchain message
    (every streamed token is one), with no serializer, computed or excluded field of its
    own, and `model_dump` not overridden. Its fields then go to orjson as they are, nested
    models through `_default` as before: the same JSON as `model_dump`'s, at a twentieth of
    the cost."""
    plain = _PLAIN_MODELS.get(cls)
    if plain is None:
        from langchain_core.messages import BaseMessage
        from pydantic import BaseModel

        decorators = getattr(cls, "__pydantic_decorators__", None)
        fields = getattr(cls, "model_fields", {})
        plain = (
            issubclass(cls, BaseMessage)
            and getattr(cls, "model_dump", None) is BaseModel.model_dump
            and decorators is not None
            and not decorators.field_serializers
            and not decorators.model_serializers
            and not decorators.computed_fields
            and not any(field.exclude for field in fields.values())
        )
        _PLAIN_MODELS[cls] = plain
    return plain


def _default(value: Any) -> Any:
    if _PLAIN_MODELS.get(type(value)) or (
        hasattr(value, "__pydantic_fields__") and _fields_are_dump(type(value))
    ):
        extra = value.__pydantic_extra__
        return {**value.__dict__, **extra} if extra else value.__dict__
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
