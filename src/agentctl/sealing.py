"""Keys that seal values at rest: one derivation for every kind of sealed value.

The operator's key material (`AGENTCTL_SECRETS_KEY`) may list several keys separated by
commas: the first seals, every one opens (`cryptography`'s `MultiFernet`: AES-128-CBC with
HMAC-SHA256). Rotation: put a new key first and keep the old ones until every value was
sealed again. Each kind of value derives its own keys (HKDF-SHA256 with its own context), so
a value of one kind never opens as another.
"""

from __future__ import annotations

import base64
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from agentctl.errors import UserError

KEY_FILE = "secrets.key"  # in the data dir of `agentctl dev`, when no key is configured

__all__ = ["KEY_FILE", "InvalidToken", "SealedJson", "key_material", "split_keys"]


def split_keys(material: str) -> tuple[str, ...]:
    """The keys of `material`, in order: comma-separated, blanks around them ignored."""
    keys = tuple(key.strip() for key in material.split(","))
    if not all(keys):
        raise UserError(
            "AGENTCTL_SECRETS_KEY lists an empty key — separate keys with single commas "
            "(the first seals, every one opens)"
        )
    return keys


class SealedJson:
    """JSON values sealed with the Fernet keys derived from `keys` (the first seals) for
    one `context`: each kind of sealed value has its own (tokens, deployed secrets)."""

    def __init__(self, keys: Sequence[str], context: bytes) -> None:
        if not keys:
            raise ValueError("no key to seal with")
        self._first = _derive(keys[0], context)
        self._every = MultiFernet([self._first, *(_derive(key, context) for key in keys[1:])])

    def seal(self, value: Any) -> bytes:
        """`value` as JSON (keys sorted), sealed with the first key."""
        return self._every.encrypt(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))

    def open(self, sealed: bytes) -> tuple[Any, bool]:
        """The value, and whether it was sealed with the first key (False: seal it again).
        Raises `InvalidToken` when no key opens it."""
        try:
            return orjson.loads(self._first.decrypt(sealed)), True
        except InvalidToken:
            return orjson.loads(self._every.decrypt(sealed)), False


def _derive(key: str, context: bytes) -> Fernet:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=context).derive(
        key.encode()
    )
    return Fernet(base64.urlsafe_b64encode(derived))


def key_material(
    configured: str | None, *, api_key: str | None = None, data_dir: Path | None = None
) -> tuple[str, ...]:
    """The keys sealing values at rest, the sealing one first: those `configured` lists
    (AGENTCTL_SECRETS_KEY; the setting whole opens too), else `api_key` whole
    (PLATFORM_API_KEY, `agentctl serve`; a comma in it is part of it), else a random key
    generated once into `data_dir`/secrets.key (mode 0600; `agentctl dev`).
    Blocking: call it at start-up."""
    if configured and configured.strip():
        keys = split_keys(configured)
        # A setting sealed with whole before it could list keys (one with a comma) still opens.
        return keys if configured in keys else (*keys, configured)
    if api_key:
        return (api_key,)
    if data_dir is None:
        raise UserError(
            "no key to seal values at rest — set AGENTCTL_SECRETS_KEY (or PLATFORM_API_KEY)"
        )
    path = data_dir / KEY_FILE
    try:
        return (path.read_text().strip(),)
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(32)
    draft = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(key + "\n")
    try:
        os.link(draft, path)  # whole or not at all; never replaces a key made meanwhile
    except FileExistsError:
        key = path.read_text().strip()
    finally:
        draft.unlink()
    return (key,)
