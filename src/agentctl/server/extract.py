"""`extract` of `POST /threads/search`: values picked out of each thread by path, so a
client listing threads (e.g. a history sidebar) need not fetch their whole state.

`{"alias": "values.messages[-1].content"}` adds `"extracted": {"alias": …}` to each
thread: a path starts at `values`, `metadata`, `config` or `interrupts`, then names keys
(`.key`) and list items (`[i]`, negative from the end); a path that leads nowhere gives
null. At most 10 paths, aliases are identifiers other than the thread's field names — as
the reference server and the SDK's `threads.search(extract=…)` have them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from agentctl import serde
from agentctl.errors import Unprocessable

MAX_PATHS = 10
ROOTS = ("values", "metadata", "config", "interrupts")
_ALIAS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATH = re.compile(rf"(?:{'|'.join(ROOTS)})(?:\.[^.\[\]]+|\[-?\d+\])*")
_STEP = re.compile(r"\.([^.\[\]]+)|\[(-?\d+)\]")


def check_extract(extract: Mapping[str, str], fields: Collection[str]) -> dict[str, str]:
    """`extract` as the request gave it, or a 422 naming what is wrong."""
    if len(extract) > MAX_PATHS:
        raise Unprocessable(f"extract: at most {MAX_PATHS} paths, got {len(extract)}")
    for alias, path in extract.items():
        if not _ALIAS.fullmatch(alias) or alias in fields:
            raise Unprocessable(
                f"extract: {alias!r} cannot name an extracted value — use letters, digits and "
                "_, and not a thread field's name",
            )
        if not _PATH.fullmatch(path):
            raise Unprocessable(
                f"extract: path {path!r} of {alias!r} is not a path — start at "
                f"{', '.join(ROOTS)}, then .key or [index], e.g. values.messages[-1].content",
            )
    return dict(extract)


def roots(extract: Mapping[str, str]) -> set[str]:
    """The thread fields the paths start at."""
    return {re.split(r"[.\[]", path, maxsplit=1)[0] for path in extract.values()}


def extracted(view: Mapping[str, Any], extract: Mapping[str, str]) -> dict[str, Any]:
    """The value at each path of `extract` in the thread `view` (None where there is none)."""
    plain = {root: serde.to_jsonable(view.get(root)) for root in roots(extract)}
    return {alias: _follow(plain, path) for alias, path in extract.items()}


def _follow(plain: Mapping[str, Any], path: str) -> Any:
    root = re.split(r"[.\[]", path, maxsplit=1)[0]
    current = plain.get(root)
    for key, index in _STEP.findall(path[len(root) :]):
        if key and isinstance(current, dict):
            current = current.get(key)
        elif index and isinstance(current, list) and -len(current) <= int(index) < len(current):
            current = current[int(index)]
        else:
            return None
    return current
