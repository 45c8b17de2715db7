"""The partner sandbox providers, as a user meets them: what to install, what to set, and one
sandbox per key that survives restarts. The partner packages are not installed here and no
test reaches the network; the pool's own logic runs against a stand-in partner SDK."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import cast

import pytest
from deepagents.backends.protocol import FileUploadResponse
from langgraph.store.memory import InMemoryStore

from agentctl.errors import RuntimeFailure, UserError
from agentctl.project.model import SandboxConfig, SandboxProvider
from agentctl.sandbox.base import SandboxKey
from agentctl.sandbox.partners import (
    Partner,
    PartnerPool,
    check_credentials,
    missing_credentials,
    partner_pool,
    record_location,
)

INSTALL: dict[SandboxProvider, str] = {
    "sandbox_a": "needs the package langchain-daytona — install it: "
    "pip install 'langchain-daytona>=0.0.9,<0.1'",
    "sandbox_b": "needs the package langchain-modal — install it: "
    "pip install 'langchain-modal>=0.0.7,<0.1'",
    "sandbox_c": "needs the package langchain-runloop — install it: "
    "pip install 'langchain-runloop>=0.0.7,<0.1'",
}


@pytest.mark.parametrize("provider", sorted(INSTALL))
def test_a_missing_package_says_what_to_install_before_anything_else(
    provider: SandboxProvider,
) -> None:
    # No credentials either: the install step is reported first.
    with pytest.raises(UserError) as caught:
        partner_pool(provider, SandboxConfig(provider=provider), {}, InMemoryStore())
    assert str(caught.value) == f'[sandbox] provider "{provider}" {INSTALL[provider]}'


def test_missing_credentials_lists_every_unset_or_empty_variable() -> None:
    assert missing_credentials("sandbox_b", {"MODAL_TOKEN_ID": ""}) == [
        "MODAL_TOKEN_ID",
        "MODAL_TOKEN_SECRET",
    ]
    assert missing_credentials("sandbox_b", {"MODAL_TOKEN_ID": "i"}) == ["MODAL_TOKEN_SECRET"]
    assert missing_credentials("sandbox_a", {"DAYTONA_API_KEY": "k"}) == []
    assert missing_credentials("sandbox_c", {"DAYTONA_API_KEY": "k"}) == ["RUNLOOP_API_KEY"]


def test_missing_credentials_error_names_them_and_where_to_set_them() -> None:
    with pytest.raises(UserError) as caught:
        check_credentials("sandbox_b", {})
    assert str(caught.value) == (
        '[sandbox] provider "sandbox_b" needs MODAL_TOKEN_ID, MODAL_TOKEN_SECRET — '
        "set them in the project's .env"
    )
    with pytest.raises(UserError) as caught:
        check_credentials("sandbox_a", {"DAYTONA_API_KEY": ""})
    assert str(caught.value) == (
        '[sandbox] provider "sandbox_a" needs DAYTONA_API_KEY — set it in the project\'s .env'
    )
    check_credentials("sandbox_c", {"RUNLOOP_API_KEY": "k"})  # all set: no error


def test_each_thread_and_the_assistant_have_their_own_record() -> None:
    places = {
        record_location("sandbox_a", SandboxKey("bot")),
        record_location("sandbox_a", SandboxKey("bot", "t1")),
        record_location("sandbox_a", SandboxKey("bot", "t2")),
        record_location("sandbox_a", SandboxKey("other", "t1")),
        record_location("sandbox_b", SandboxKey("bot")),
    }
    assert len(places) == 5
    assert record_location("sandbox_c", SandboxKey("bot", "t1")) == (
        ("sandboxes", "partner", "sandbox_c"),
        SandboxKey("bot", "t1").name,
    )


# The pool, against a stand-in for a partner SDK: sandboxes are ids in `alive`.


@dataclass
class Box:
    id: str
    files: dict[str, bytes] = field(default_factory=dict)

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        self.files.update(files)
        return [FileUploadResponse(path=path) for path, _ in files]


@dataclass
class StandIn:
    alive: set[str] = field(default_factory=set)
    created: list[str] = field(default_factory=list)
    fail: Exception | None = None
    closed: bool = False
    ids: itertools.count[int] = field(default_factory=itertools.count)

    def connect(self, sandbox_id: str) -> Box | None:
        if self.fail:
            raise self.fail
        return Box(sandbox_id) if sandbox_id in self.alive else None

    def create(self, key: SandboxKey) -> Box:
        if self.fail:
            raise self.fail
        sandbox_id = f"sb-{next(self.ids)}"
        self.alive.add(sandbox_id)
        self.created.append(sandbox_id)
        return Box(sandbox_id)

    def close(self) -> None:
        self.closed = True


def as_partner(stand_in: StandIn) -> Partner:
    """The stand-in as the pool sees it: it has the two calls the pool makes (`connect`,
    `create`) and answers with boxes that have the one method the pool uses."""
    return cast(Partner, stand_in)


def pool(partner: StandIn, store: InMemoryStore, secrets: tuple[str, ...] = ()) -> PartnerPool:
    return PartnerPool("sandbox_a", as_partner(partner), store, secrets)


async def test_the_skills_are_copied_into_each_sandbox_once() -> None:
    skills = {"greet/SKILL.md": b"# greet", "greet/greet.py": b"print('hi')"}
    shared = PartnerPool("sandbox_a", as_partner(StandIn()), InMemoryStore(), skills=skills)
    box = await shared.acquire(SandboxKey("bot", "t1"))
    assert box.files == {
        "/memories/skills/greet/SKILL.md": b"# greet",
        "/memories/skills/greet/greet.py": b"print('hi')",
    }
    box.files.clear()
    await shared.acquire(SandboxKey("bot", "t1"))
    assert box.files == {}


async def test_concurrent_first_calls_share_one_new_sandbox_and_record_it() -> None:
    partner, store = StandIn(), InMemoryStore()
    key = SandboxKey("bot", "t1")
    shared = pool(partner, store)
    got = await asyncio.gather(*(shared.acquire(key) for _ in range(5)))
    assert partner.created == ["sb-0"]
    assert {box.id for box in got} == {"sb-0"}
    item = await store.aget(*record_location("sandbox_a", key))
    assert item is not None
    assert item.value == {"id": "sb-0"}


async def test_threads_and_assistant_scope_get_distinct_sandboxes() -> None:
    shared = pool(StandIn(), InMemoryStore())
    ids = {(await shared.acquire(key)).id for key in (SandboxKey("bot"), SandboxKey("bot", "t"))}
    assert len(ids) == 2


async def test_a_restarted_server_or_another_replica_finds_the_recorded_sandbox() -> None:
    partner, store = StandIn(), InMemoryStore()
    key = SandboxKey("bot")
    first = await pool(partner, store).acquire(key)
    again = await pool(partner, store).acquire(key)
    assert again.id == first.id
    assert partner.created == [first.id]


async def test_a_sandbox_gone_at_the_partner_is_replaced_and_the_new_one_recorded() -> None:
    partner, store = StandIn(), InMemoryStore()
    key = SandboxKey("bot", "t1")
    first = await pool(partner, store).acquire(key)
    partner.alive.clear()  # expired, or deleted by hand
    second = await pool(partner, store).acquire(key)
    assert second.id != first.id
    item = await store.aget(*record_location("sandbox_a", key))
    assert item is not None
    assert item.value == {"id": second.id}


async def test_a_partner_failure_is_one_line_naming_the_provider_without_the_key() -> None:
    partner = StandIn(fail=ConnectionError("401 for token sk-secret-123\nretry later"))
    with pytest.raises(RuntimeFailure) as caught:
        await pool(partner, InMemoryStore(), ("sk-secret-123",)).acquire(SandboxKey("bot"))
    assert str(caught.value) == (
        '[sandbox] provider "sandbox_a" failed: ConnectionError: 401 for token *** retry later'
    )


async def test_aclose_releases_the_client_and_keeps_the_sandboxes() -> None:
    partner, store = StandIn(), InMemoryStore()
    shared = pool(partner, store)
    box = await shared.acquire(SandboxKey("bot"))
    await shared.aclose()
    assert partner.closed
    assert box.id in partner.alive
    assert await store.aget(*record_location("sandbox_a", SandboxKey("bot"))) is not None
