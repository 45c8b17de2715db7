"""What the tests of users' connections share: the loopback OAuth provider (with a
registered client `agentctl`), a real SQLite connection store, and a browser (an httpx
client that keeps its cookies)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from agentctl.connections import Connections
from agentctl.storage.base import ConnectionStore
from agentctl.storage.sqlite import SqliteStorage
from agentctl.testing.oauth_provider import OAuthProvider


@pytest.fixture(scope="module")
def provider() -> Iterator[OAuthProvider]:
    with OAuthProvider(clients={"agentctl": "agentctl-secret"}) as served:
        yield served


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ConnectionStore]:
    storage = SqliteStorage(tmp_path / "agentctl.db", tmp_path / "store.db")
    yield storage.connections
    await storage.close()


@pytest.fixture
async def browser() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


# The connections a test opened (tests/connections/test_connections.py `connections`),
# closed after it, whichever module it is in.
OPEN: list[Connections] = []


@pytest.fixture(autouse=True)
async def close_connections() -> AsyncIterator[None]:
    yield
    while OPEN:
        await OPEN.pop().aclose()
