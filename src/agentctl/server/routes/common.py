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


def query_modes(values: Sequence[str] | None, known: Collection[str]) -> list[str]:
    """`?stream_mode=` as the SDKs send it: repeated (`?stream_mode=values&stream_mode=
    updates`), or one JSON list (`?stream_mode=["values","updates"]`, the JS SDK's
    `joinStream`); empty values (the Python SDK's "none") are dropped. An unknown mode is
    a 422, not a stream that silently carries nothing."""
    modes: list[str] = []
    for value in values or ():
        if value.startswith("["):
            try:
                listed = json.loads(value)
            except ValueError:
                listed = None
            if not isinstance(listed, list) or not all(isinstance(m, str) for m in listed):
                raise Unprocessable(
                    f"query parameter stream_mode: {value!r} is not a JSON list of modes"
                )
            modes.extend(listed)
        else:
            modes.append(value)
    modes = [mode for mode in dict.fromkeys(modes) if mode]
    problem = unknown_names("stream mode", modes, known, use="one or more of")
    if problem:
        raise Unprocessable(f"query parameter stream_mode: {problem}")
    return modes


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
