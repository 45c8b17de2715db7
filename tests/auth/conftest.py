"""Real loopback identity providers, shared by a module's tests and reset before each."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from agentctl.testing.identity import IdpAServer, IdpBServer, OidcIssuer, new_rsa_key


@pytest.fixture(scope="module")
def idp_a_server() -> Iterator[IdpAServer]:
    with IdpAServer() as server:
        yield server


@pytest.fixture
def idp_a(idp_a_server: IdpAServer) -> IdpAServer:
    idp_a_server.outage, idp_a_server.delay, idp_a_server.calls = False, 0.0, 0
    return idp_a_server


@pytest.fixture(scope="module")
def idp_b_server() -> Iterator[IdpBServer]:
    with IdpBServer() as server:
        yield server


@pytest.fixture
def idp_b(idp_b_server: IdpBServer) -> IdpBServer:
    idp_b_server.outage, idp_b_server.jwks_fetches = False, 0
    return idp_b_server


@pytest.fixture(scope="module")
def oidc_server() -> Iterator[OidcIssuer]:
    with OidcIssuer(audience="agentctl-tests", path="/realms/demo") as server:
        yield server


@pytest.fixture
def oidc(oidc_server: OidcIssuer) -> OidcIssuer:
    oidc_server.outage, oidc_server.jwks_fetches, oidc_server.discovery_fetches = False, 0, 0
    oidc_server.signing_algs, oidc_server.key_alg = ["RS256"], None
    return oidc_server


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
