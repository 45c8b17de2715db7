"""Deployed secrets, sealed at rest: the values of a revision's environment variables are
encrypted (Fernet: AES-128-CBC with HMAC-SHA256) before they reach the database, with a key
derived from `AGENTCTL_SECRETS_KEY` (or, unset, `PLATFORM_API_KEY`)."""

from __future__ import annotations

import base64
from collections.abc import Mapping

import orjson
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from agentctl.errors import SecretsUnreadable

_CONTEXT = b"agentctl deployed secrets v1"


class SecretBox:
    def __init__(self, key_material: str) -> None:
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_CONTEXT).derive(
            key_material.encode()
        )
        self._fernet = Fernet(base64.urlsafe_b64encode(derived))

    def seal(self, secrets: Mapping[str, str]) -> bytes:
        return self._fernet.encrypt(orjson.dumps(dict(secrets), option=orjson.OPT_SORT_KEYS))

    def open(self, sealed: bytes) -> dict[str, str]:
        try:
            values: dict[str, str] = orjson.loads(self._fernet.decrypt(sealed))
        except InvalidToken:
            raise SecretsUnreadable(
                "the deployed secrets cannot be decrypted with this server's key — "
                "AGENTCTL_SECRETS_KEY (or PLATFORM_API_KEY, when it is unset) changed since "
                "they were stored; restore it, or deploy the project again"
            ) from None
        return values
