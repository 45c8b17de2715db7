"""Which protocol events a subscription receives: channels, namespace prefixes, depth."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentctl.errors import FilterError

CHANNELS = (
    "values",
    "updates",
    "messages",
    "tools",
    "lifecycle",
    "input",
    "checkpoints",
    "tasks",
    "custom",
)
# The event `method` of each channel whose name differs.
_CHANNEL_OF_METHOD = {"input.requested": "input"}


@dataclass(frozen=True)
class EventFilter:
    channels: frozenset[str]
    namespaces: tuple[tuple[str, ...], ...] | None = None
    depth: int | None = None

    def matches(self, event: dict[str, Any]) -> bool:
        method = event["method"]
        channel = _CHANNEL_OF_METHOD.get(method, method)
        params = event["params"]
        if channel == "custom":
            name = params["data"].get("name") if isinstance(params["data"], dict) else None
            if "custom" not in self.channels and f"custom:{name}" not in self.channels:
                return False
        elif channel not in self.channels:
            return False
        if self.namespaces is None:
            return True
        namespace = params["namespace"]
        return any(
            is_prefix(namespace, prefix)
            and (self.depth is None or len(namespace) - len(prefix) <= self.depth)
            for prefix in self.namespaces
        )


def is_prefix(namespace: Sequence[str], prefix: Sequence[str]) -> bool:
    """Whether `namespace` starts with `prefix`; a prefix segment without `:` names a node
    whatever its task id (`tools` matches `tools:1f2e…`)."""
    if len(prefix) > len(namespace):
        return False
    for wanted, segment in zip(prefix, namespace, strict=False):
        if segment != wanted and (":" in wanted or segment.split(":", 1)[0] != wanted):
            return False
    return True


def parse_filter(params: Any) -> EventFilter:
    """The filter of a subscribe request (`{channels, namespaces?, depth?}`)."""
    if not isinstance(params, dict):
        raise FilterError("send the subscription as a JSON object with `channels`")
    channels = params.get("channels")
    if not isinstance(channels, list) or not channels:
        raise FilterError(
            f"`channels` must be a non-empty list of channel names: {', '.join(CHANNELS)} "
            "or custom:<name>"
        )
    bad = [
        repr(c)
        for c in channels
        if not isinstance(c, str) or not (c in CHANNELS or (c.startswith("custom:") and c[7:]))
    ]
    if bad:
        raise FilterError(
            f"unknown channel {', '.join(bad[:5])}: use {', '.join(CHANNELS)} or custom:<name>"
        )
    namespaces = params.get("namespaces")
    if namespaces is not None and not (
        isinstance(namespaces, list)
        and all(isinstance(ns, list) and all(isinstance(s, str) for s in ns) for ns in namespaces)
    ):
        raise FilterError("`namespaces` must be a list of namespaces, each a list of strings")
    depth = params.get("depth")
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 0):
        raise FilterError("`depth` must be a whole number of levels, 0 or more")
    return EventFilter(
        frozenset(channels),
        tuple(tuple(ns) for ns in namespaces) if namespaces else None,
        depth,
    )


def parse_since(params: dict[str, Any]) -> int | None:
    """The `since` cursor: the `seq` of the last event the client has."""
    since = params.get("since")
    if since is None:
        return None
    if not isinstance(since, int) or isinstance(since, bool) or since < 0:
        raise FilterError("`since` must be the `seq` of the last event received (0 or more)")
    return since
