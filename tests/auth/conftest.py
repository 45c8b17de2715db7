"""Fixtures of the authenticators' tests (the identity providers are in tests/conftest.py)."""

from __future__ import annotations

import socket

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from agentctl.testing.identity import new_rsa_key


@pytest.fixture(scope="session")
def stranger_key() -> rsa.RSAPrivateKey:
    """A real RSA key that no provider's key set holds."""
    return new_rsa_key()


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
