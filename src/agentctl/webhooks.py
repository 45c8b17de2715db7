"""Webhook signatures, as Standard Webhooks (standardwebhooks.com) defines them: what the
server signs its webhooks with, and what a receiver checks them with.

Every webhook carries three headers:

- ``webhook-id``: the message's id (the run's id), the same on every retry: an idempotency key;
- ``webhook-timestamp``: when this attempt was signed, in whole seconds since the epoch;
- ``webhook-signature``: ``v1,<base64 of HMAC-SHA256(key, "{id}.{timestamp}.{body}")>``.

The secret is ``whsec_`` followed by the base64 of the key (the `AGENTCTL_WEBHOOK_SECRET`
setting; unset, `secret_for` derives it from `PLATFORM_API_KEY`). Any Standard Webhooks
library verifies these signatures; in Python without one::

    from agentctl.webhooks import verify
    run = verify(request_body, request_headers, secret)  # raises WebhookVerificationError

This module imports nothing but the standard library and `agentctl.errors`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

from agentctl.errors import WebhookVerificationError

SECRET_PREFIX = "whsec_"
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
VERSION = "v1"
TOLERANCE_SECONDS = 5 * 60  # how old (or early) a timestamp `verify` accepts
_DERIVATION = b"agentctl webhook signing key v1"


def secret_key(secret: str) -> bytes:
    """The key of a ``whsec_…`` secret; ValueError when it is not one."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError(f"a webhook secret starts with {SECRET_PREFIX!r}, then base64")
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except binascii.Error:
        raise ValueError(f"a webhook secret is {SECRET_PREFIX!r} followed by base64") from None
    if len(key) < 16:
        raise ValueError("a webhook secret's key must be at least 16 bytes (24 base64 characters)")
    return key


def new_secret() -> str:
    """A new random secret (32 bytes)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def secret_for(api_key: str) -> str:
    """The secret a server whose `AGENTCTL_WEBHOOK_SECRET` is unset signs with: derived from
    its deployment key (`PLATFORM_API_KEY`), so every replica has the same one."""
    key = hmac.new(api_key.encode(), _DERIVATION, hashlib.sha256).digest()
    return SECRET_PREFIX + base64.b64encode(key).decode()


def signature(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value of `body` sent as `message_id` at `timestamp`."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return f"{VERSION},{base64.b64encode(digest).decode()}"


def sign(secret: str, message_id: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    """The three headers of `body` sent as `message_id` (now, unless `timestamp`)."""
    at = int(time.time()) if timestamp is None else timestamp
    return {
        ID_HEADER: message_id,
        TIMESTAMP_HEADER: str(at),
        SIGNATURE_HEADER: signature(secret_key(secret), message_id, at, body),
    }


def verify(
    body: bytes,
    headers: Mapping[str, str],
    secret: str,
    *,
    tolerance: float = TOLERANCE_SECONDS,
    now: float | None = None,
) -> Any:
    """The JSON of `body` once its headers prove the server holding `secret` sent it
    within `tolerance` seconds; `WebhookVerificationError` otherwise. `headers` may be any
    mapping (names are matched without regard to case)."""
    lower = {name.lower(): value for name, value in headers.items()}
    message_id = lower.get(ID_HEADER)
    sent = lower.get(TIMESTAMP_HEADER)
    signatures = lower.get(SIGNATURE_HEADER)
    if not message_id or not sent or not signatures:
        missing = [h for h in (ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER) if not lower.get(h)]
        raise WebhookVerificationError(f"missing header {', '.join(missing)}")
    try:
        timestamp = int(sent)
    except ValueError:
        raise WebhookVerificationError(f"{TIMESTAMP_HEADER} is not a number") from None
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise WebhookVerificationError(
            f"{TIMESTAMP_HEADER} is more than {tolerance:g} s away from now (a replay?)"
        )
    try:
        key = secret_key(secret)
    except ValueError as exc:
        raise WebhookVerificationError(str(exc)) from None
    expected = signature(key, message_id, timestamp, body)
    # The header may list several space-separated signatures (a key being rotated).
    given = signatures.encode("utf-8", "surrogateescape").split()
    if not any(hmac.compare_digest(expected.encode(), one) for one in given):
        raise WebhookVerificationError("no signature matches: wrong secret, or a changed body")
    return json.loads(body)
