"""Deployed secrets, sealed at rest: the values of a revision's environment variables are
encrypted (Fernet: AES-128-CBC with HMAC-SHA256) before they reach the database, with keys
derived from `AGENTCTL_SECRETS_KEY` (or, unset, `PLATFORM_API_KEY`): several keys separated
by commas rotate it, the first sealing, every one opening (`agentctl.sealing`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agentctl.errors import SecretsUnreadable
from agentctl.sealing import InvalidToken, SealedJson

_CONTEXT = b"agentctl deployed secrets v1"


class SecretBox:
    def __init__(self, keys: Sequence[str]) -> None:
        self._sealed = SealedJson(keys, _CONTEXT)

    def seal(self, secrets: Mapping[str, str]) -> bytes:
        return self._sealed.seal(dict(secrets))

    def open(self, sealed: bytes) -> dict[str, str]:
        try:
            values, _ = self._sealed.open(sealed)
        except InvalidToken:
            raise SecretsUnreadable(
                "the deployed secrets cannot be decrypted with this server's key — "
                "AGENTCTL_SECRETS_KEY (or PLATFORM_API_KEY, when it is unset) changed since "
                "they were stored; restore it (or list the old key after the new one, "
                "comma-separated), or deploy the project again"
            ) from None
        return dict(values)
