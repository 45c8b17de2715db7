"""Request field types every route shares, checked once at the request model: a value that
SQLite or PostgreSQL cannot give back unchanged (an integer or a number past 64 bits, a NUL
character or a lone surrogate, nesting past `MAX_DEPTH`, an offset or delay past any clock) is
a 422 naming the field (`metadata.n`), never a 500 — on either backend alike.

`Body` walks every JSON value of its declared fields (unknown fields stay ignored); the
`Annotated` types below add what a field means (metadata keys a filter can name, store
filter operators, paging and time bounds) and say so in the OpenAPI document.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Collection, Iterable
from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, model_validator
from starlette.requests import HTTPConnection

from agentctl.engine.wire import STREAM_MODES
from agentctl.errors import Unprocessable
from agentctl.serde import invalid_text

INT64 = (-(2**63), 2**63 - 1)
UUID_PARAMS = ("thread_id", "run_id", "cron_id")  # path parameters that are UUIDs
MAX_DEPTH = 100
MAX_FLOAT = 1e16  # from here on, JSON writes a float with an exponent PostgreSQL drops
MAX_OFFSET = 10**12
MAX_SECONDS = 10 * 365 * 24 * 3600  # ten years
# An item's key, and its namespace joined by '.': PostgreSQL's index of the two holds at
# most ~2.7 KB (a key of 8 KB was a 500).
MAX_STORE_KEY_BYTES = 1024
STORE_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_FILTER_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")  # what the langgraph stores can filter on
_CONTROL = re.compile(r'["\\\x00-\x1f]')


def _at(path: str) -> str:
    return f"{path}: " if path else ""


def check_json(value: Any, path: str = "", depth: int = 0) -> Any:
    """`value` when SQLite and PostgreSQL alike store it and give it back unchanged; a
    ValueError naming the offending part (`metadata.n`) otherwise.

    PostgreSQL's JSONB refuses NUL and lone surrogates in text, and gives a number back in
    its decimal digits: from `1e30` an integer of 31 digits (past the 64 bits answers hold),
    from `4.946528504409307e16` the integer 49465285044093070 (another number than the
    float). So integers must fit in 64 bits, and other numbers lie within ±1e16."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{_at(path)}nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not INT64[0] <= value <= INT64[1]:
            raise ValueError(f"{_at(path)}integer {value} does not fit in 64 bits")
    elif isinstance(value, float):
        if not -MAX_FLOAT < value < MAX_FLOAT:  # NaN and infinities fail this too
            raise ValueError(
                f"{_at(path)}number {value!r} is out of range: a number that is not an "
                "integer must lie within ±1e16 — send a larger one as an integer (of 64 "
                "bits) or as a string"
            )
    elif isinstance(value, str):
        check_text(value, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(key, f"{path} key {key!r}" if path else f"key {key!r}")
            check_json(item, f"{path}.{key}" if path else key, depth + 1)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            check_json(item, f"{path}[{index}]", depth + 1)
    return value


def check_text(value: str, path: str = "") -> str:
    """`value` when it is text both databases hold: no NUL character, no lone surrogate
    (`"\\ud800"`, which is no character at all: UTF-8 has no bytes for it)."""
    problem = invalid_text(value)
    if problem is not None:
        raise ValueError(f"{_at(path)}text must not contain {problem} — send valid Unicode")
    return value


class Body(BaseModel):
    """A request body: unknown fields are ignored, wrong types and values no store can hold
    are a 422."""

    model_config = ConfigDict(extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in cls.model_fields.keys() & data.keys():
                check_json(data[name], name)
        return data


def check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    """Metadata whose every key a search can name (SQLite's JSON paths cannot hold quotes,
    backslashes or control characters)."""
    for key in value:
        if _CONTROL.search(key):
            raise ValueError(
                f"key {key!r} must not contain quotes, backslashes or control characters"
            )
    return value


def check_config(value: dict[str, Any]) -> dict[str, Any]:
    """A run config as langgraph reads it."""
    configurable = value.get("configurable")
    if configurable is not None and not isinstance(configurable, dict):
        raise ValueError("configurable must be an object")
    tags = value.get("tags")
    if tags is not None and not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        raise ValueError("tags must be a list of strings")
    limit = value.get("recursion_limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError("recursion_limit must be a positive integer")
    return value


def check_store_filter(value: dict[str, Any]) -> dict[str, Any]:
    """A store filter: `{key: value}` or `{key: {"$op": value}}` with a known operator."""
    for key, wanted in value.items():
        if not _FILTER_KEY.match(key):
            raise ValueError(
                f"key {key!r} may hold only letters, digits, '_', '-' and '.' (a nested path)"
            )
        if isinstance(wanted, dict):
            problem = unknown_names("operator", wanted, STORE_OPERATORS)
            if problem:
                raise ValueError(f"{key}: {problem}")
    return value


def unknown_names(
    what: str, given: Iterable[str], known: Collection[str], *, use: str = "one of"
) -> str | None:
    """What is wrong when `given` names a `what` not in `known` ("unknown operator '$in' —
    use one of $eq, …"), or None when it names only known ones."""
    unknown = [name for name in given if name not in known]
    if not unknown:
        return None
    return f"unknown {what} {', '.join(map(repr, unknown))} — use {use} {', '.join(known)}"


def check_label(value: str) -> str:
    if not value:
        raise ValueError("namespace labels must not be empty")
    if "." in value or "\x00" in value:
        raise ValueError(f"label {value!r} must not contain '.' or the NUL character")
    return check_text(value)


def check_namespace(value: list[str]) -> list[str]:
    if not value:
        raise ValueError("must have at least one label")
    if len(".".join(value).encode()) > MAX_STORE_KEY_BYTES:
        raise ValueError(f"its labels joined by '.' must take at most {MAX_STORE_KEY_BYTES} bytes")
    return value


def check_store_key(value: str) -> str:
    """An item's key: PostgreSQL indexes it with its namespace, in at most ~2.7 KB."""
    if len(check_text(value).encode()) > MAX_STORE_KEY_BYTES:
        raise ValueError(f"must take at most {MAX_STORE_KEY_BYTES} bytes (UTF-8)")
    return value


async def check_url(connection: HTTPConnection) -> None:
    """A dependency of every route: a path or query parameter holding NUL (`%00`), or a
    path id of `UUID_PARAMS` that is not a UUID, is a 422 naming it. Async, so that FastAPI
    runs it on the loop rather than handing each request to a thread."""
    given = [
        *(("path parameter", name, value) for name, value in connection.path_params.items()),
        *(
            ("query parameter", name, value)
            for name, value in connection.query_params.multi_items()
        ),
    ]
    for kind, name, value in given:
        if isinstance(value, str) and "\x00" in value:
            raise Unprocessable(f"{kind} {name}: must not contain the NUL character")
    for name in UUID_PARAMS:
        value = connection.path_params.get(name)
        if isinstance(value, str):
            try:
                uuid.UUID(value)
            except ValueError:
                raise Unprocessable(f"path parameter {name}: {value!r} is not a UUID") from None


Metadata = Annotated[dict[str, Any], AfterValidator(check_metadata)]
Config = Annotated[dict[str, Any], AfterValidator(check_config)]
StoreFilter = Annotated[dict[str, Any], AfterValidator(check_store_filter)]
Label = Annotated[
    str,
    AfterValidator(check_label),
    WithJsonSchema({"type": "string", "minLength": 1, "pattern": "^[^.\\u0000]+$"}),
]
Namespace = Annotated[
    list[Label], AfterValidator(check_namespace), Field(json_schema_extra={"minItems": 1})
]
NamespacePrefix = list[Label]
StoreKey = Annotated[str, AfterValidator(check_store_key), Field(max_length=MAX_STORE_KEY_BYTES)]
Limit = Annotated[int, Field(ge=1, le=1000)]
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET)]
Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS, allow_inf_nan=False)]
_MODE = {"type": "string", "enum": list(STREAM_MODES)}
# One stream mode or a list of them (checked with a message listing them by the models).
StreamModes = Annotated[
    str | list[str],
    WithJsonSchema({"anyOf": [_MODE, {"type": "array", "items": _MODE}]}),
]
RevisionNumber = Annotated[int, Path(ge=1, le=INT64[1])]
AssistantVersion = Annotated[int, Field(ge=1, le=2**31 - 1)]  # stored as a 32-bit integer
SortOrder = Literal["asc", "desc"]
OnConflict = Literal["raise", "do_nothing"]


class PageQuery(Body):
    """The page a search body asks for; each search adds its `sort_by` and `select`."""

    limit: Limit = 10
    offset: Offset = 0
    sort_order: SortOrder | None = None
