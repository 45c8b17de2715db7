"""`TokenBox`: users' OAuth tokens, client registrations and consent flows' secrets, sealed
at rest under the operator's key (`agentctl.sealing`) with a context of their own, so a
sealed token never opens as a deployed secret, nor the other way round."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentctl.sealing import InvalidToken, SealedJson

CONTEXT = b"agentctl user connections v1"


class Unreadable(Exception):
    """A sealed value no configured key opens (the key changed): treated as absent."""


class TokenBox:
    def __init__(self, keys: Sequence[str]) -> None:
        self._sealed = SealedJson(keys, CONTEXT)

    def seal(self, value: dict[str, Any]) -> bytes:
        """`value` (JSON) sealed with the first key."""
        return self._sealed.seal(value)

    def open(self, sealed: bytes) -> tuple[dict[str, Any], bool]:
        """The value, and whether the first key sealed it (False: seal it again)."""
        try:
            value, current = self._sealed.open(sealed)
        except InvalidToken:
            raise Unreadable from None
        return dict(value), current
