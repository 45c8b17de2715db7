"""`TokenBox`: users' OAuth tokens, client registrations and consent flows' secrets, sealed
at rest under the operator's key (`agentctl.sealing`) with a context of their own, so a
sealed token never opens as a deployed secret, nor the other way round."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from agentctl.sealing import InvalidToken, Keys

CONTEXT = b"agentctl user connections v1"


class Unreadable(Exception):
    """A sealed value no configured key opens (the key changed): treated as absent."""


class TokenBox:
    def __init__(self, keys: Sequence[str]) -> None:
        self._keys = Keys(keys, CONTEXT)

    def seal(self, value: dict[str, Any]) -> bytes:
        """`value` (JSON) sealed with the first key."""
        return self._keys.seal(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))

    def open(self, sealed: bytes) -> tuple[dict[str, Any], bool]:
        """The value, and whether the first key sealed it (False: seal it again)."""
        try:
            data, current = self._keys.open(sealed)
        except InvalidToken:
            raise Unreadable from None
        value: dict[str, Any] = orjson.loads(data)
        return value, current
