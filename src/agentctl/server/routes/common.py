"""Pieces every resource's routes share: the request-body base, paging, `select`, and the
query parameters and headers several routes parse alike."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from typing import Any

from agentctl.engine.streams import REPLAY_ALL
from agentctl.errors import Unprocessable
from agentctl.server.fields import SortOrder, unknown_names
from agentctl.storage.base import Page


def page(limit: int, offset: int, sort_by: str | None, sort_order: SortOrder | None) -> Page:
    return Page(limit=limit, offset=offset, sort_by=sort_by, sort_order=sort_order or "desc")


def select_fields(view: dict[str, Any], select: Sequence[str] | None) -> dict[str, Any]:
    """Only the fields `select` names (every field when it names none)."""
    if not select:
        return view
    return {name: value for name, value in view.items() if name in select}


def query_xray(value: str | None) -> bool | int:
    """`?xray=` as the SDK sends it: true/false or a depth."""
    if value is None:
        return False
    text = value.strip().lower()
    if text in ("true", "yes", "on"):
        return True
    if text in ("false", "no", "off", ""):
        return False
    try:
        depth = int(text)
    except ValueError:
        raise Unprocessable(
            f"query parameter xray: {value!r} is not true, false or a depth"
        ) from None
    if depth < 0:
        raise Unprocessable("query parameter xray: the depth must not be negative")
    return depth


def query_names(
    parameter: str, what: str, values: Sequence[str] | None, known: Collection[str]
) -> list[str]:
    """A list in the query as the SDKs send it: repeated (`?select=a&select=b`: the Python
    SDK and newer JS SDKs), or one JSON list (`?select=["a","b"]`: older JS SDKs, and the JS
    SDK's `joinStream` for `stream_mode`); empty values (the Python SDK's "none") are
    dropped. An unknown name is a 422, not an answer that silently leaves it out."""
    names: list[str] = []
    for value in values or ():
        if value.startswith("["):
            try:
                listed = json.loads(value)
            except ValueError:
                listed = None
            if not isinstance(listed, list) or not all(isinstance(n, str) for n in listed):
                raise Unprocessable(
                    f"query parameter {parameter}: {value!r} is not a JSON list of {what}s"
                )
            names.extend(listed)
        else:
            names.append(value)
    names = [name for name in dict.fromkeys(names) if name]
    problem = unknown_names(what, names, known, use="one or more of")
    if problem:
        raise Unprocessable(f"query parameter {parameter}: {problem}")
    return names


def query_modes(values: Sequence[str] | None, known: Collection[str]) -> list[str]:
    """`?stream_mode=`, repeated or one JSON list (`query_names`)."""
    return query_names("stream_mode", "stream mode", values, known)


# `<ms>-<seq>` (or `<ms>`) within what both backends store (64-bit signed).
_EVENT_ID = re.compile(r"\d{1,18}(?:-\d{1,18})?")
# Ids that mean "from the start": `-`, and `-1`, the JS SDK's `useStream` default.
_FROM_START = frozenset({REPLAY_ALL, "-1"})


def checked_event_id(value: str | None) -> str | None:
    """A `Last-Event-ID` as `follow` takes it. A well-formed id that names no event is
    fine (the stream goes on after that position, or live past the end of the log); only
    what cannot be an id at all is a 422."""
    if not value:
        return None
    if value in _FROM_START:
        return REPLAY_ALL
    if not _EVENT_ID.fullmatch(value):
        raise Unprocessable(
            f"Last-Event-ID {value!r} is not an event id — send an id from the stream or '-'"
        )
    return value
