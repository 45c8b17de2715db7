"""JSON schemas of a compiled graph, for `GET /assistants/{id}/schemas` and `/subgraphs`.

langgraph builds them with pydantic, which refuses some state types (a `typing.TypedDict`
on Python < 3.12, a field annotated with a bare TypeVar, ...). Then the schema is rebuilt
field by field, a field pydantic cannot describe becoming "any"; a schema that still fails
is null rather than a 500. Schemas are computed once per compiled graph.
"""

from __future__ import annotations

import contextlib
import logging
import typing
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from pydantic import Field, TypeAdapter, create_model

log = logging.getLogger("agentctl.server")

_CACHE: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
_WRAPPERS = ("Annotated", "NotRequired", "Required", "ReadOnly")


def graph_schemas(graph: Any, graph_id: str) -> dict[str, Any]:
    """`{graph_id, input_schema, output_schema, state_schema, config_schema,
    context_schema}` of `graph`."""
    try:
        cached = _CACHE.get(graph)
    except TypeError:  # not weak-referenceable
        cached = None
    if cached is None:
        cached = {
            "input_schema": _safe("input", graph, lambda: _io_schema(graph, "input")),
            "output_schema": _safe("output", graph, lambda: _io_schema(graph, "output")),
            "state_schema": _safe("state", graph, lambda: _state_schema(graph)),
            "config_schema": _safe("config", graph, lambda: _config_schema(graph)),
            "context_schema": _safe("context", graph, graph.get_context_jsonschema),
        }
        with contextlib.suppress(TypeError):
            _CACHE[graph] = cached
    return {"graph_id": graph_id, **cached}


def subgraph_schemas(
    graph: Any, graph_id: str, *, namespace: str | None, recurse: bool
) -> dict[str, dict[str, Any]]:
    """`{namespace: schemas}` of the graph's subgraphs (only `namespace`'s when given)."""
    try:
        found = list(graph.get_subgraphs(namespace=namespace, recurse=recurse))
    except Exception:
        log.warning("could not list the subgraphs of %s", graph_id, exc_info=True)
        return {}
    return {ns: graph_schemas(subgraph, graph_id) for ns, subgraph in found}


def _safe(kind: str, graph: Any, build: Callable[[], Any]) -> dict[str, Any] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            schema = build()
    except Exception as exc:
        log.info("no %s schema for graph %s: %s: %s", kind, _name(graph), type(exc).__name__, exc)
        return None
    return schema if isinstance(schema, dict) else None


def _name(graph: Any) -> str:
    return str(getattr(graph, "name", None) or type(graph).__name__)


def _io_schema(graph: Any, which: str) -> dict[str, Any]:
    native = graph.get_input_jsonschema if which == "input" else graph.get_output_jsonschema
    try:
        schema: dict[str, Any] = native()
        return schema
    except Exception:
        builder = getattr(graph, "builder", None)
        if builder is None:
            raise
        typ = builder.input_schema if which == "input" else builder.output_schema
        return _fields_schema(graph.get_name(which.capitalize()), typ, omit=which)


def _state_schema(graph: Any) -> dict[str, Any]:
    builder = getattr(graph, "builder", None)
    if builder is not None:
        return _fields_schema(graph.get_name("State"), builder.state_schema, omit=None)
    fields = {k: graph.channels[k].ValueType for k in graph.stream_channels_list}
    return _model_schema(graph.get_name("State"), fields)


def _config_schema(graph: Any) -> dict[str, Any]:
    schema: dict[str, Any] = graph.get_config_jsonschema()
    return schema


def _fields_schema(name: str, typ: Any, *, omit: str | None) -> dict[str, Any]:
    """A schema for the (TypedDict, dataclass, model) `typ`, field by field."""
    hints = typing.get_type_hints(typ, include_extras=True)
    fields = {key: _unwrap(hint) for key, hint in hints.items() if not _omitted(hint, omit)}
    return _model_schema(name, fields)


def _model_schema(name: str, fields: dict[str, Any]) -> dict[str, Any]:
    definitions: dict[str, Any] = {}
    for index, (key, hint) in enumerate(fields.items()):
        try:
            TypeAdapter(hint).json_schema()
        except Exception:
            hint = Any
        # An alias keeps names pydantic reserves (a leading underscore) as they are.
        definitions[f"field_{index}"] = (hint, Field(None, alias=key))
    model: Any = create_model(name, **definitions)
    schema: dict[str, Any] = model.model_json_schema(by_alias=True)
    return schema


def _unwrap(hint: Any) -> Any:
    """`hint` without Annotated / NotRequired / Required / ReadOnly wrappers."""
    while True:
        origin = typing.get_origin(hint)
        if origin is not typing.Annotated and getattr(origin, "_name", None) not in _WRAPPERS:
            return hint
        hint = typing.get_args(hint)[0]


def _omitted(hint: Any, omit: str | None) -> bool:
    if omit is None:
        return False
    for meta in getattr(hint, "__metadata__", ()):
        if type(meta).__name__ == "OmitFromSchema" and getattr(meta, omit, False):
            return True
    return False
