"""Keys and signed tokens for the loopback identity providers, including forged ones."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

__all__ = ["new_rsa_key", "public_jwk", "public_pem", "sign"]

_HMAC = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}


def new_rsa_key() -> rsa.RSAPrivateKey:
    """A fresh 2048-bit RSA signing key."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_pem(key: rsa.RSAPrivateKey) -> bytes:
    """The public half of `key`, PEM-encoded (what an HS256 forgery uses as its secret)."""
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def public_jwk(key: rsa.RSAPrivateKey, kid: str, alg: str | None = None) -> dict[str, Any]:
    """The public half of `key` as a JWK for a key set, declaring `alg` when given."""
    jwk: dict[str, Any] = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    jwk.update(kid=kid, use="sig")
    if alg:
        jwk["alg"] = alg
    return jwk


def sign(claims: Mapping[str, Any], *, kid: str | None, alg: str, key: Any) -> str:
    """A compact JWS of `claims`. Besides what PyJWT signs, makes the tokens it refuses to:
    ``alg: none`` and HMAC keyed with a public key's PEM bytes."""
    header: dict[str, Any] = {"alg": alg, "typ": "JWT"}
    if kid:
        header["kid"] = kid
    if alg == "none" or alg in _HMAC:
        signing_input = f"{_b64_json(header)}.{_b64_json(dict(claims))}"
        if alg == "none":
            return f"{signing_input}."
        secret = key.encode() if isinstance(key, str) else key
        if not isinstance(secret, bytes):
            raise TypeError(f"{alg} needs a bytes or str key")
        digest = hmac.new(secret, signing_input.encode(), _HMAC[alg]).digest()
        return f"{signing_input}.{_b64(digest)}"
    return jwt.encode(dict(claims), key, algorithm=alg, headers={"kid": kid} if kid else None)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64_json(value: dict[str, Any]) -> str:
    return _b64(json.dumps(value, separators=(",", ":")).encode())
